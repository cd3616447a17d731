// The tailor program: everything happens in the cli layer and the core below it.
#include "cli/commands.h"

int main(int argc, char** argv) { return tailor::cli::run_tailor(argc, argv); }
