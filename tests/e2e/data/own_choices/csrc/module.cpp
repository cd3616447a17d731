// tailor's e2e test fixture: OwnChoices._kernels, a CPython module (no torch header).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "own_choices.h"

// count() -> int: the kernels the three CUDA units carry (8 each), counted on the host.
static PyObject* count(PyObject*, PyObject*) {
  return PyLong_FromLong(own_choices_k1() + own_choices_k2() + own_choices_k3());
}

static PyMethodDef methods[] = {
    {"count", count, METH_NOARGS, "count(): kernels in the module"},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT,
                             "_kernels",
                             "tailor's e2e test fixture",
                             -1,
                             methods,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

PyMODINIT_FUNC PyInit__kernels() { return PyModule_Create(&module); }
