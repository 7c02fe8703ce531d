// Host code that reads no PARAMS name: TILE is only named here, in a comment.
#include <cstdio>

constexpr int TILE_COUNT = 4;

void report() { std::printf("TILE is the kernels' own; %d tiles\n", TILE_COUNT); }
