// The tile's default: what a build without -DTILE=... compiles (grid.cpp's, every time).
#pragma once
#ifndef TILE
#define TILE 8
#endif
