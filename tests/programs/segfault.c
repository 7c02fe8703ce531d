/* A benchmark that crashes with a real segmentation fault (null pointer write). */
#include <stdio.h>

int main(void) {
    printf("CIQ_METRIC time_ms=1.0\n");
    fflush(stdout);
    volatile int *pointer = 0;
    *pointer = 42;
    return 0;
}
