# Writes its argument (folders, one a line: data/build/target_site_paths.py's output) to a
# .pth file of this interpreter's purelib, so its venv sees those folders. Run by
# src/workflow/extension_build.cpp in the import check's venv.
import sysconfig, sys
open(sysconfig.get_paths()['purelib'] + '/_tailor_target_site.pth', 'w').write(sys.argv[1])
