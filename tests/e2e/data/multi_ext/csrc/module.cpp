// tailor's e2e test fixture: a CPython module named by MODULE_NAME (no torch header).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define TAILOR_CAT2(a, b) a##b
#define TAILOR_CAT(a, b) TAILOR_CAT2(a, b)
#define TAILOR_STR2(a) #a
#define TAILOR_STR(a) TAILOR_STR2(a)

#ifndef HOST_ONLY
extern "C" int multi_ext_scale(float* values, float factor, int n);
#endif

// twice(x: float) -> float, on the host; has_cuda() -> bool.
static PyObject* twice(PyObject*, PyObject* args) {
  double x = 0;
  if (!PyArg_ParseTuple(args, "d", &x)) return nullptr;
  return PyFloat_FromDouble(2 * x);
}

static PyObject* has_cuda(PyObject*, PyObject*) {
#ifdef HOST_ONLY
  Py_RETURN_FALSE;
#else
  // Referenced so the kernel's object is linked in; never called here.
  static int (*volatile keep)(float*, float, int) = multi_ext_scale;
  return PyBool_FromLong(keep != nullptr);
#endif
}

static PyMethodDef methods[] = {
    {"twice", twice, METH_VARARGS, "twice(x): 2 * x"},
    {"has_cuda", has_cuda, METH_NOARGS, "has_cuda(): whether this module carries the CUDA kernel"},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT,
                             TAILOR_STR(MODULE_NAME),
                             "tailor's e2e test fixture",
                             -1,
                             methods,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

PyMODINIT_FUNC TAILOR_CAT(PyInit_, MODULE_NAME)() { return PyModule_Create(&module); }
