// TEST DOUBLE for a GPU benchmark (see CMakeLists.txt): no CUDA call at all.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <unistd.h>

int dry_cost();

static long long wall_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch()).count();
}

int main() {
    const long long start = wall_ns();
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const char* shown = visible && *visible ? visible : "-";
    // The fake bus of the GPU the run would use: the first one visible (device 0).
    const int first = static_cast<int>(std::strcspn(shown, ","));
    std::printf("CIQ_INFO device 0 bus fake-%.*s CUDA_VISIBLE_DEVICES=%s\n", first, shown, shown);
    std::this_thread::sleep_for(std::chrono::milliseconds(DRY_BENCH_MS));
    std::printf("CIQ_METRIC time_ms=%.3f\nCIQ_CHECK PASS\n", 1.0 + 0.1 * dry_cost());
    if (const char* path = std::getenv("CIQ_BENCH_LOG"); path && *path) {
        if (std::FILE* log = std::fopen(path, "a")) {
            std::fprintf(log, "%lld %lld %lld visible=%s bus=fake-%.*s\n", static_cast<long long>(getpid()),
                         start, wall_ns(), shown, first, shown);
            std::fclose(log);
        }
    }
    return 0;
}
