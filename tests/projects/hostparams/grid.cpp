// The launch's grid, sized on the host from TILE: tile.h's default, never a candidate's (BLOCK is kern.cu's).
#include "tile.h"

int grid_for(int n) { return (n + TILE - 1) / TILE; }
const char* grid_note() { return "BLOCK threads a block"; }
