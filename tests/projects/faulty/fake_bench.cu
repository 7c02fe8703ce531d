// TEST DOUBLE for a GPU benchmark (see CMakeLists.txt). MODE picks a fault:
// 0 ok, 1 hang (with a hanging child), 2 segfault, 3 garbage output,
// 4 failed correctness check, 5 non-zero exit, 6 no metric, 7 compile error,
// 8 compile hang (includes a FIFO nobody writes), 9 NaN time.
// Whatever the MODE: when the file named by $FAULTY_BUSY exists, each run first
// takes as many seconds as the file says (60 if it says none), after writing
// <that file>.started-<pid>: how a test sees a long benchmark run. It sleeps
// through them: a run that spun (even at nice 19) cost the suite its seconds in
// CPU and told the tests of interrupted tunes nothing a sleeping run does not.
// C headers only: C++ ones such as <chrono> and <string> cost each compile of this file ~0.6 s of CPU
// more (it is compiled once per candidate).
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef MODE
#define MODE 0
#endif
#ifndef X
#define X 3
#endif

#if MODE == 7
#error "MODE 7: this candidate does not compile"
#elif MODE == 8
#include "hang.fifo"
#endif

__global__ void never_launched(float* p) { p[threadIdx.x] *= 2.0f; }

static void busy_when_asked() {
  const char* flag = getenv("FAULTY_BUSY");
  if (flag == nullptr || *flag == '\0') return;
  FILE* in = fopen(flag, "r");
  if (in == nullptr) return;
  double seconds = 60.0;
  if (fscanf(in, "%lf", &seconds) != 1) seconds = 60.0;
  fclose(in);
  char started[4096];
  snprintf(started, sizeof started, "%s.started-%d", flag, static_cast<int>(getpid()));
  if (FILE* out = fopen(started, "w")) fclose(out);
  timespec left;
  left.tv_sec = static_cast<time_t>(seconds);
  left.tv_nsec = static_cast<long>((seconds - static_cast<double>(left.tv_sec)) * 1e9);
  while (nanosleep(&left, &left) == -1) {
  }  // a signal's handler (none here) may cut it short: sleep what is left
}

int main(int argc, char** argv) {
  // The arguments must arrive intact, never through a shell.
  if (argc != 4 || strcmp(argv[1], "an argument with spaces") != 0 ||
      strcmp(argv[2], "$(touch pwned)") != 0 || strcmp(argv[3], "|&<>") != 0) {
    printf("CIQ_CHECK FAIL\nbad arguments\n");
    return 1;
  }
  busy_when_asked();
  switch (MODE) {
    case 1:
      if (fork() == 0) { for (;;) pause(); }
      for (;;) pause();
    case 2:
      raise(SIGSEGV);
      return 0;
    case 3:
      printf("CIQ_METRIC time_ms=\x01\xff\xfe garbage\nCIQ_METRIC time_ms=fast\n");
      return 0;
    case 4:
      printf("CIQ_CHECK FAIL\nCIQ_METRIC time_ms=0.5\n");
      return 1;
    case 5:
      return 3;
    case 6:
      printf("hello\n");
      return 0;
    case 9:
      printf("CIQ_CHECK PASS\nCIQ_METRIC time_ms=nan\n");
      return 0;
    default:
      break;
  }
  // A deterministic "runtime", best at X == 1: the same candidate always
  // scores the same, so a resumed search can be compared with an uninterrupted one.
  printf("CIQ_CHECK PASS\nCIQ_METRIC time_ms=%.6f\n", 1.0 + 0.25 * (X > 1 ? X - 1 : 1 - X));
  return 0;
}
