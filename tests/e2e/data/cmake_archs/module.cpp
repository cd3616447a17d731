// tailor's e2e test fixture: cmake_archs._cm, a CPython module (no torch header).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern "C" int cmake_archs_kernels();

static PyObject* kernels(PyObject*, PyObject*) { return PyLong_FromLong(cmake_archs_kernels()); }

static PyMethodDef methods[] = {
    {"kernels", kernels, METH_NOARGS, "kernels(): how many kernels the module carries"},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT,
                             "_cm",
                             "tailor's e2e test fixture",
                             -1,
                             methods,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

PyMODINIT_FUNC PyInit__cm() { return PyModule_Create(&module); }
