// upstream flash.cu's forward() launch, on raw device pointers instead of torch tensors.
#pragma once

// Q, K, V, O: [B, nh, N, d] floats; l, m: [B, nh, N]. O, l and m must hold 0, 0 and -inf (the kernel
// reads them as its running state, as upstream's forward() initialises them). Returns the launch's error.
int attn_forward(const float* Q, const float* K, const float* V, int B, int nh, int N, int d,
                 float* l, float* m, float* O);
int attn_tile();  // Bc (= Br) as built
