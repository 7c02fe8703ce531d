/* sample_extension._core: the sample kernels, callable from Python.
 *
 *   gemm(a, b, m, n, k) -> list[float]   C = A (m x k) * B (k x n), row-major
 *   reduce_sum(x) -> float
 *   build_info() -> dict                 pinned controls and effective tile sizes
 *
 * Inputs are any buffer of C floats (array('f'), numpy float32, ...) or any
 * sequence of numbers. GPU errors raise RuntimeError. Plain CPython C API,
 * so the extension needs nothing beyond the compiler.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "ciq_pins.h"     /* generated: what ciq_tune_target() applied */
#include "kernels_c.h"

/* Input floats, borrowed from a buffer or copied from a sequence. */
typedef struct {
    Py_buffer view;
    int has_view;
    float *copy;
    const float *data;
    Py_ssize_t size;
} FloatInput;

static void input_release(FloatInput *in) {
    if (in->has_view) PyBuffer_Release(&in->view);
    PyMem_Free(in->copy);
    memset(in, 0, sizeof(*in));
}

static int input_from(PyObject *obj, const char *name, FloatInput *in) {
    memset(in, 0, sizeof(*in));
    if (PyObject_CheckBuffer(obj)) {
        if (PyObject_GetBuffer(obj, &in->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
        in->has_view = 1;
        if (in->view.itemsize == sizeof(float) && in->view.format != NULL &&
            (strcmp(in->view.format, "f") == 0 || strcmp(in->view.format, "<f") == 0 ||
             strcmp(in->view.format, "=f") == 0)) {
            in->data = (const float *)in->view.buf;
            in->size = in->view.len / (Py_ssize_t)sizeof(float);
            return 0;
        }
        /* Another element type: fall through and convert element-wise. */
        PyBuffer_Release(&in->view);
        in->has_view = 0;
    }
    PyObject *seq = PySequence_Fast(obj, "");
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "%s must be a float32 buffer or a sequence of numbers", name);
        return -1;
    }
    in->size = PySequence_Fast_GET_SIZE(seq);
    in->copy = PyMem_Malloc(sizeof(float) * (size_t)(in->size > 0 ? in->size : 1));
    if (in->copy == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < in->size; ++i) {
        const double value = PyFloat_AsDouble(items[i]);
        if (value == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            PyMem_Free(in->copy);
            in->copy = NULL;
            return -1;
        }
        in->copy[i] = (float)value;
    }
    Py_DECREF(seq);
    in->data = in->copy;
    return 0;
}

static PyObject *list_from_floats(const float *values, Py_ssize_t count) {
    PyObject *list = PyList_New(count);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject *item = PyFloat_FromDouble(values[i]);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *py_gemm(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"a", "b", "m", "n", "k", NULL};
    PyObject *a_obj, *b_obj;
    int m, n, k;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOiii:gemm", keywords, &a_obj, &b_obj, &m, &n, &k))
        return NULL;
    if (m <= 0 || n <= 0 || k <= 0) {
        PyErr_SetString(PyExc_ValueError, "m, n and k must be positive");
        return NULL;
    }
    FloatInput a, b;
    if (input_from(a_obj, "a", &a) < 0) return NULL;
    if (input_from(b_obj, "b", &b) < 0) {
        input_release(&a);
        return NULL;
    }
    PyObject *result = NULL;
    float *c = NULL;
    if (a.size != (Py_ssize_t)m * k || b.size != (Py_ssize_t)k * n) {
        PyErr_Format(PyExc_ValueError, "a must hold m*k = %zd floats and b k*n = %zd; got %zd and %zd",
                     (Py_ssize_t)m * k, (Py_ssize_t)k * n, a.size, b.size);
        goto done;
    }
    c = PyMem_Malloc(sizeof(float) * (size_t)m * (size_t)n);
    if (c == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    char error[256] = "";
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = sample_gemm_host(m, n, k, a.data, b.data, c, error, sizeof(error));
    Py_END_ALLOW_THREADS
    if (status != 0) {
        PyErr_Format(PyExc_RuntimeError, "gemm failed: %s", error);
        goto done;
    }
    result = list_from_floats(c, (Py_ssize_t)m * n);
done:
    PyMem_Free(c);
    input_release(&a);
    input_release(&b);
    return result;
}

static PyObject *py_reduce_sum(PyObject *self, PyObject *arg) {
    (void)self;
    FloatInput x;
    if (input_from(arg, "x", &x) < 0) return NULL;
    char error[256] = "";
    float sum = 0.0f;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = sample_reduce_sum_host(x.data, (size_t)x.size, &sum, error, sizeof(error));
    Py_END_ALLOW_THREADS
    input_release(&x);
    if (status != 0) {
        PyErr_Format(PyExc_RuntimeError, "reduce_sum failed: %s", error);
        return NULL;
    }
    return PyFloat_FromDouble(sum);
}

/* {"status": ..., "pin_file": ..., "nvcc_arguments": [...], "params": {...}} */
static PyObject *target_info(const char *status, const char *pin_file, const char *const *arguments,
                             const char *const *param_names, const int *param_values) {
    PyObject *args = PyList_New(0), *params = PyDict_New(), *info = NULL;
    if (args == NULL || params == NULL) goto fail;
    for (const char *const *p = arguments; *p != NULL; ++p) {
        PyObject *s = PyUnicode_FromString(*p);
        if (s == NULL || PyList_Append(args, s) < 0) {
            Py_XDECREF(s);
            goto fail;
        }
        Py_DECREF(s);
    }
    for (int i = 0; param_names[i] != NULL; ++i) {
        PyObject *v = PyLong_FromLong(param_values[i]);
        if (v == NULL || PyDict_SetItemString(params, param_names[i], v) < 0) {
            Py_XDECREF(v);
            goto fail;
        }
        Py_DECREF(v);
    }
    info = Py_BuildValue("{s:s,s:s,s:O,s:O}", "status", status, "pin_file", pin_file,
                         "nvcc_arguments", args, "params", params);
fail:
    Py_XDECREF(args);
    Py_XDECREF(params);
    return info;
}

static PyObject *py_build_info(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    static const char *const gemm_args[] = {SAMPLE_GEMM_KERNELS_PIN_ARGUMENTS NULL};
    static const char *const reduce_args[] = {SAMPLE_REDUCE_KERNELS_PIN_ARGUMENTS NULL};
    static const char *const gemm_names[] = {"CIQ_GEMM_BM", "CIQ_GEMM_BN", "CIQ_GEMM_BK",
                                             "CIQ_GEMM_TM", "CIQ_GEMM_TN", NULL};
    static const char *const reduce_names[] = {"CIQ_REDUCE_BLOCK", "CIQ_REDUCE_ITEMS", NULL};
    int gemm_values[5], reduce_values[2];
    sample_gemm_params(gemm_values);
    sample_reduce_params(reduce_values);

    PyObject *gemm = target_info(SAMPLE_GEMM_KERNELS_PIN_STATUS, SAMPLE_GEMM_KERNELS_PIN_FILE,
                                 gemm_args, gemm_names, gemm_values);
    PyObject *reduce = target_info(SAMPLE_REDUCE_KERNELS_PIN_STATUS, SAMPLE_REDUCE_KERNELS_PIN_FILE,
                                   reduce_args, reduce_names, reduce_values);
    PyObject *info = NULL;
    if (gemm != NULL && reduce != NULL)
        info = Py_BuildValue("{s:O,s:O,s:s}", "gemm_kernels", gemm, "reduce_kernels", reduce,
                             "cuda_compiler_version", SAMPLE_CUDA_COMPILER_VERSION);
    Py_XDECREF(gemm);
    Py_XDECREF(reduce);
    return info;
}

static PyMethodDef methods[] = {
    {"gemm", (PyCFunction)(void (*)(void))py_gemm, METH_VARARGS | METH_KEYWORDS,
     "gemm(a, b, m, n, k) -> list[float]\n\nC = A * B on the GPU; a is m x k, b is k x n, row-major."},
    {"reduce_sum", py_reduce_sum, METH_O, "reduce_sum(x) -> float\n\nSum of x on the GPU."},
    {"build_info", py_build_info, METH_NOARGS,
     "build_info() -> dict\n\nPer kernel library: the pinned record's status and file, the nvcc\n"
     "arguments applied from it, and the tile parameters the kernels were compiled with."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_core", "The sample CUDA kernels (see sample_extension).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
