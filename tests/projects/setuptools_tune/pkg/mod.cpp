// The Python module: a thin C API wrapper around the kernel library.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vector>

#include "kern.h"

static PyObject* tile(PyObject*, PyObject*) { return PyLong_FromLong(kern_tile()); }

static PyObject* device_count(PyObject*, PyObject*)
{
    int count = 0;
    int err = kern_device_count(&count);
    return Py_BuildValue("(ii)", err, count);
}

static PyObject* scale(PyObject*, PyObject* args)
{
    PyObject* seq = nullptr;
    float factor = 1.0f;
    if (!PyArg_ParseTuple(args, "Of", &seq, &factor)) return nullptr;
    PyObject* fast = PySequence_Fast(seq, "scale() needs a sequence of numbers");
    if (fast == nullptr) return nullptr;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    std::vector<float> data(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        data[i] = static_cast<float>(PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i)));
    }
    Py_DECREF(fast);
    if (PyErr_Occurred()) return nullptr;
    int err = kern_scale(data.data(), static_cast<int>(n), factor);
    if (err != 0) return PyErr_Format(PyExc_RuntimeError, "CUDA error %d", err);
    PyObject* out = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; ++i) PyList_SET_ITEM(out, i, PyFloat_FromDouble(data[i]));
    return out;
}

static PyMethodDef methods[] = {
    {"tile", tile, METH_NOARGS, "CIQ_TILE as the kernel was compiled with."},
    {"device_count", device_count, METH_NOARGS, "(cudaError_t, device count) from cudaGetDeviceCount."},
    {"scale", scale, METH_VARARGS, "scale(values, factor): the values times factor, computed on the GPU."},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kern", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__kern(void) { return PyModule_Create(&module); }
