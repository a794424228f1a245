/*
 * kina's allocator for the buffers of a native step (MLIR's generic allocation functions, which
 * finalize-memref-to-llvm{use-generic-functions} calls): a freed block goes on a free list of its
 * size and the next allocation of that size takes it back, so after the first step a step neither
 * calls malloc nor faults a page in. Blocks are never returned to the system: the memory kept is,
 * per size, the most blocks of that size live at once. Blocks are 64-byte aligned; one lock guards
 * the lists (allocations happen outside parallel loops, so it is not contended).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define HEADER 64
#define SLOTS 4096

typedef struct block { struct block *next; size_t size; } block;

static struct { size_t size; block *free; } table[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t slot(size_t size) {
    size_t h = (size * 0x9E3779B97F4A7C15ull) >> 52;
    for (size_t i = 0; i < SLOTS; i++, h = (h + 1) % SLOTS)
        if (table[h].size == size || table[h].size == 0) return h;
    return SLOTS;
}

void *_mlir_memref_to_llvm_alloc(size_t size) {
    size = (size + 63) & ~(size_t) 63;
    pthread_mutex_lock(&lock);
    size_t s = slot(size);
    block *b = s < SLOTS ? table[s].free : NULL;
    if (b) table[s].free = b->next;
    pthread_mutex_unlock(&lock);
    if (!b) {
        char *p = aligned_alloc(64, size + HEADER);
        if (!p) return NULL;
        b = (block *) p;
        b->size = size;
    }
    return (char *) b + HEADER;
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
    return alignment <= 64 ? _mlir_memref_to_llvm_alloc(size) : NULL;
}

void _mlir_memref_to_llvm_free(void *ptr) {
    if (!ptr) return;
    block *b = (block *) ((char *) ptr - HEADER);
    pthread_mutex_lock(&lock);
    size_t s = slot(b->size);
    if (s < SLOTS) {
        table[s].size = b->size;
        b->next = table[s].free;
        table[s].free = b;
        b = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (b) free(b);
}
