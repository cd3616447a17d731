// tailor's e2e test fixture: cmake_jobs._cj, a CPython module (no torch header).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern "C" int cmake_jobs_k1();
extern "C" int cmake_jobs_k2();
extern "C" int cmake_jobs_k3();
extern "C" int cmake_jobs_k4();

static PyObject* kernels(PyObject*, PyObject*) {
  return PyLong_FromLong(cmake_jobs_k1() + cmake_jobs_k2() + cmake_jobs_k3() + cmake_jobs_k4());
}

static PyMethodDef methods[] = {
    {"kernels", kernels, METH_NOARGS, "kernels(): how many kernels the module carries"},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT,
                             "_cj",
                             "tailor's e2e test fixture",
                             -1,
                             methods,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

PyMODINIT_FUNC PyInit__cj() { return PyModule_Create(&module); }
