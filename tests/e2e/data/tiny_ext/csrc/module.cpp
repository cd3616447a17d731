// tailor's e2e test fixture: a CPython module (no torch header) around the kernel in scale.cu.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vector>

extern "C" int tiny_ext_scale(float* values, float factor, int n);
extern "C" const char* tiny_ext_error_string(int code);

// scale(values: list[float], factor: float) -> list[float]
static PyObject* scale(PyObject*, PyObject* args) {
  PyObject* list = nullptr;
  float factor = 1.0f;
  if (!PyArg_ParseTuple(args, "O!f", &PyList_Type, &list, &factor)) return nullptr;
  const Py_ssize_t n = PyList_Size(list);
  std::vector<float> values(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    values[static_cast<size_t>(i)] = static_cast<float>(PyFloat_AsDouble(PyList_GetItem(list, i)));
    if (PyErr_Occurred()) return nullptr;
  }
  const int rc = tiny_ext_scale(values.data(), factor, static_cast<int>(n));
  if (rc != 0)
    return PyErr_Format(PyExc_RuntimeError, "tiny_ext: CUDA error %d: %s", rc,
                        tiny_ext_error_string(rc));
  PyObject* out = PyList_New(n);
  if (!out) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i)
    PyList_SetItem(out, i, PyFloat_FromDouble(values[static_cast<size_t>(i)]));
  return out;
}

static PyMethodDef methods[] = {
    {"scale", scale, METH_VARARGS, "scale(values, factor): each value times factor, on the GPU"},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT,
                             "_C",
                             "tailor's e2e test fixture",
                             -1,
                             methods,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

PyMODINIT_FUNC PyInit__C() { return PyModule_Create(&module); }
