// tailor's e2e test fixture: found through a relative include folder (include_dirs=
// ["csrc/include"]), which works only where the compiler runs in the source folder, as
// setuptools' own compile does; tailor's Ninja compiles in the build folder.
#pragma once
extern "C" int own_choices_k1();
extern "C" int own_choices_k2();
extern "C" int own_choices_k3();
#define OWN_CHOICES_KERNELS 8
