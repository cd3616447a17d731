# tailor's build driver: builds the wheel of the source in the current folder through its
# PEP 517 backend, in this interpreter, with no build isolation:
#   python -u tailor-build-wheel.py OUT_DIR
# tailor writes this file and the tailor_driver package beside it into the build's work
# folder (both are embedded in the binary, from driver/) and runs it with the source as
# its working folder; every value reaches the driver as an argument or an environment
# variable. The package's modules are read without writing __pycache__ beside them; the
# package's own build keeps the interpreter's setting.
import sys

if __name__ == "__main__":
    was = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    from tailor_driver.backend import main
    sys.dont_write_bytecode = was
    main()
