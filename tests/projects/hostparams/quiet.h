// Included by quiet.cu alone: its default reaches no host code.
#pragma once
#ifndef TILE
#define TILE 8
#endif
