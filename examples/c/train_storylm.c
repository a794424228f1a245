/*
 * Trains a StoryLM decoder from C, with no JVM: the whole train step (forward, transform_ad's
 * backward, gradient clipping, AdamW) is one shared object that `kina compile` built, called once
 * per step. kina wrote everything else it reads: the step's header (step.h), the initial weights
 * (a checkpoint: `kina model init`) and the token batches (`kina model batches`). docs/native.md
 * has the commands; in short, for the tiny config:
 *
 *   bin/kina model print --config tiny --batch 2 > build/tiny_step.kina
 *   bin/kina compile build/tiny_step.kina -o build/step.so --header build/step.h
 *   bin/kina model init --config tiny --seed 11 --out build/init
 *   bin/kina model batches --config tiny --batch 2 --seed 11 --steps 20 --out build/batches.bin
 *   clang-19 -O2 -Wall -Wextra -I build examples/c/train_storylm.c -o build/train_storylm -lm -ldl
 *   build/train_storylm build/step.so build/init build/batches.bin --steps 20 --warmup 2
 *
 * It prints the loss of every step; they follow `kina train --config tiny --batch 2 --seed 11
 * --steps 20 --warmup 2` within rounding (the object is not the plan: other summation orders).
 * The learning-rate schedule is kina train's: a linear warm-up, then a cosine decay to a tenth.
 */
#define _POSIX_C_SOURCE 200809L            /* clock_gettime, dlopen */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "step.h"

/* The step's own inputs: every other input is state the step carries as an output new_<name>. */
#if STEP_IN_IDS_DTYPE != KINA_I64 || STEP_IN_TARGETS_DTYPE != KINA_I64 || STEP_IN_LR_DTYPE != KINA_F32 || STEP_OUT_LOSS_DTYPE != KINA_F32
#error "step.h is not a StoryLM train step (kina model print --what train-step)"
#endif

/* The AdamW betas `kina model print` builds into the step (its bias corrections are inputs). */
static const double BETA1 = 0.9, BETA2 = 0.95;
static const double PI = 3.14159265358979323846;

static void die(const char *fmt, const char *what) {
    fprintf(stderr, "train_storylm: ");
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    exit(1);
}

/* The whole file, NUL-terminated; *size excludes the NUL. */
static char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) die("%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) die("%s: cannot read", path);
    fclose(f);
    b[n] = 0;
    *size = (size_t)n;
    return b;
}

/* After the JSON key "key" (a whole key: the quotes, then a colon), the first character of its value. */
static const char *json_value(const char *json, const char *end, const char *key) {
    size_t k = strlen(key);
    for (const char *p = json; p + k + 2 <= end; p++) {
        if (p[0] != '"' || strncmp(p + 1, key, k) != 0 || p[k + 1] != '"') continue;
        const char *q = p + k + 2;
        while (q < end && (*q == ' ' || *q == '\n')) q++;
        if (q < end && *q == ':') {
            q++;
            while (q < end && (*q == ' ' || *q == '\n')) q++;
            return q;
        }
    }
    return NULL;
}

/* A safetensors file: an 8-byte little-endian header length, a JSON header, the tensors' bytes. */
typedef struct { char *bytes; size_t size; const char *json, *json_end; const char *data; int tensors; } safetensors;

static safetensors st_open(const char *path) {
    safetensors f;
    uint64_t n = 0;
    f.bytes = slurp(path, &f.size);
    for (int i = 7; i >= 0; i--) n = n << 8 | (unsigned char)f.bytes[i];
    if (f.size < 8 || n > f.size - 8) die("%s: not a safetensors file", path);
    f.json = f.bytes + 8;
    f.json_end = f.json + n;
    f.data = f.json_end;
    f.tensors = 0;
    for (const char *p = f.json; p < f.json_end; p++) f.tensors += strncmp(p, "\"data_offsets\"", 14) == 0;
    return f;
}

/* Copies tensor a->name of f into buf after checking its dtype, shape and size; 0 when f has no such tensor. */
static int st_read(const safetensors *f, const kina_arg *a, void *buf, const char *path) {
    const char *v = json_value(f->json, f->json_end, a->name);
    if (!v) return 0;
    const char *close = memchr(v, '}', (size_t)(f->json_end - v));
    const char *dtype = close ? json_value(v, close, "dtype") : NULL;
    const char *shape = close ? json_value(v, close, "shape") : NULL;
    const char *offsets = close ? json_value(v, close, "data_offsets") : NULL;
    if (!dtype || !shape || !offsets || strncmp(dtype, "\"F32\"", 5) != 0) die("%s: a tensor is not F32 with a shape and offsets", a->name);
    char *p = (char *)shape + 1;
    for (int d = 0; d < a->rank; d++) {
        if (strtoll(p, &p, 10) != a->shape[d]) die("%s: the checkpoint's shape is not the step's", a->name);
        p += *p == ',';
    }
    if (*p != ']') die("%s: the checkpoint's rank is not the step's", a->name);
    p = (char *)offsets + 1;
    long long begin = strtoll(p, &p, 10);
    long long end = strtoll(p + 1, NULL, 10);
    if (end - begin != a->bytes || begin < 0 || (size_t)end > f->size - (size_t)(f->data - f->bytes))
        die("%s: the checkpoint's data offsets do not fit", path);
    memcpy(buf, f->data + begin, (size_t)a->bytes);
    return 1;
}

static double elapsed_ms(struct timespec a, struct timespec b) {
    return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: train_storylm STEP.so CHECKPOINT_DIR BATCHES.bin [--steps N] [--lr LR] [--warmup W]\n");
        return 2;
    }
    long steps = -1, warmup = -1;
    double peak = 3e-3;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--steps") == 0) steps = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--lr") == 0) peak = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--warmup") == 0) warmup = atol(argv[i + 1]);
        else die("unknown option %s (--steps, --lr, --warmup)", argv[i]);
    }

#ifdef __GLIBC__
    /* The object mallocs and frees its intermediates in every call. By default glibc maps each large block
       afresh and gives it back, so every call would fault its pages in again (ten times the tiny step's
       time); keep them, as kina's JVM host does. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif

    /* The object: dlopen it and find its one entry. */
    char so[4096];
    snprintf(so, sizeof so, "%s%s", strchr(argv[1], '/') ? "" : "./", argv[1]);   /* a bare name would be searched for */
    void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!lib) die("%s", dlerror());
    kina_call_fn call;
    void *sym = dlsym(lib, "kina_call");
    if (!sym) die("%s: no kina_call (not a kina object)", argv[1]);
    memcpy(&call, &sym, sizeof call);

    /* A 64-byte aligned buffer and a descriptor for every argument. */
    const kina_arg *args = step_args();
    void *buf[STEP_ARGS], *desc[STEP_ARGS];
    for (int i = 0; i < STEP_ARGS; i++) {
        size_t bytes = ((size_t)args[i].bytes + KINA_ALIGNMENT - 1) / KINA_ALIGNMENT * KINA_ALIGNMENT;
        buf[i] = aligned_alloc(KINA_ALIGNMENT, bytes);
        desc[i] = malloc(KINA_MEMREF_BYTES(args[i].rank));
        if (!buf[i] || !desc[i]) die("%s: out of memory", args[i].name);
        memset(buf[i], 0, bytes);
        kina_memref_bind(desc[i], &args[i], buf[i]);
    }

    /* The carried state: each input but the step's own is a weight or a moment; output new_<name> is its next value. */
    int carried_in[STEP_INPUTS], carried_out[STEP_INPUTS], ncarried = 0;
    for (int i = 0; i < STEP_INPUTS; i++) {
        if (i == STEP_IN_IDS || i == STEP_IN_TARGETS || i == STEP_IN_LR || i == STEP_IN_BC1 || i == STEP_IN_BC2
                || i == STEP_IN_COS || i == STEP_IN_SIN)
            continue;
        char want[256];
        snprintf(want, sizeof want, "new_%s", args[i].name);
        int k = STEP_INPUTS;
        while (k < STEP_ARGS && strcmp(args[k].name, want) != 0) k++;
        if (k == STEP_ARGS || args[k].bytes != args[i].bytes) die("input %s has no output new_<name> to carry it", args[i].name);
        carried_in[ncarried] = i;
        carried_out[ncarried++] = k;
    }

    /* The checkpoint (a step directory, or a run directory whose file latest names one): its weights, its moments
       (a step-0 checkpoint has none: they start at +0.0), its step and RoPE base. */
    char dir[4096], path[4096];
    size_t size;
    snprintf(dir, sizeof dir, "%s", argv[2]);
    snprintf(path, sizeof path, "%s/latest", argv[2]);
    FILE *latest = fopen(path, "r");
    if (latest) {
        char name[256] = "";
        if (!fgets(name, sizeof name, latest)) die("%s: empty", path);
        name[strcspn(name, "\n")] = 0;
        snprintf(dir, sizeof dir, "%s/%s", argv[2], name);
        fclose(latest);
    }
    snprintf(path, sizeof path, "%s/state.json", dir);
    char *state = slurp(path, &size);
    const char *v = json_value(state, state + size, "step"), *base = json_value(state, state + size, "rope_base");
    if (!v || !base) die("%s: no step or rope_base (not a kina checkpoint)", path);
    long start = atol(v);
    double rope_base = atof(base);
    char optpath[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(optpath, sizeof optpath, "%s/optimizer.safetensors", dir);
    safetensors model = st_open(path), opt = st_open(optpath);
    int weight[STEP_INPUTS];
    for (int c = 0; c < ncarried; c++) weight[c] = st_read(&model, &args[carried_in[c]], buf[carried_in[c]], path);
    for (int c = 0; c < ncarried; c++) {
        if (weight[c]) continue;
        /* not a weight: a moment <state>_<weight> of one, from the optimizer's file */
        const char *name = args[carried_in[c]].name;
        int moment = 0;
        for (int w = 0; w < ncarried; w++) {
            size_t n = strlen(name), m = strlen(args[carried_in[w]].name);
            moment |= weight[w] && n > m + 1 && name[n - m - 1] == '_' && strcmp(name + n - m, args[carried_in[w]].name) == 0;
        }
        if (!moment) die("%s: a weight the checkpoint does not hold", name);
        if (!st_read(&opt, &args[carried_in[c]], buf[carried_in[c]], optpath) && opt.tensors > 0)
            die("%s: a moment the checkpoint's optimizer.safetensors does not hold", name);
    }

    /* The batches: a header (KINABAT1, steps, batch, seq), then each step's ids and targets as int64. */
    FILE *batches = fopen(argv[3], "rb");
    if (!batches) die("%s: cannot open", argv[3]);
    char magic[8];
    int64_t head[3];
    if (fread(magic, 1, 8, batches) != 8 || memcmp(magic, "KINABAT1", 8) != 0 || fread(head, sizeof head[0], 3, batches) != 3)
        die("%s: not a kina batches file (kina model batches)", argv[3]);
    if (head[1] != STEP_IN_IDS_DIM0 || head[2] != STEP_IN_IDS_DIM1) die("%s: its batch and seq are not the step's", argv[3]);
    if (steps < 0) steps = head[0];
    if (steps > head[0]) die("%s: holds fewer batches than --steps", argv[3]);
    if (warmup < 0) warmup = steps / 10 < 100 ? steps / 10 : 100;

    /* RoPE's tables, as kina's trainer makes them: theta(t, i) = t * base^(-2i / head_dim). */
    float *cs = buf[STEP_IN_COS], *sn = buf[STEP_IN_SIN];
    for (int t = 0; t < STEP_IN_COS_DIM0; t++)
        for (int i = 0; i < STEP_IN_COS_DIM1; i++) {
            double theta = t * pow(rope_base, -2.0 * i / (2 * STEP_IN_COS_DIM1));
            cs[t * STEP_IN_COS_DIM1 + i] = (float)cos(theta);
            sn[t * STEP_IN_SIN_DIM1 + i] = (float)sin(theta);
        }

    printf("train_storylm: %s, %d carried tensors, steps %ld to %ld, lr %g, warmup %ld\n", argv[1], ncarried, start + 1, steps, peak, warmup);
    struct timespec t0, t1;
    double calls = 0;
    for (long s = start; s < steps; s++) {
        size_t n = (size_t)STEP_IN_IDS_ELEMENTS;
        if (fseek(batches, (long)(32 + s * 2 * n * sizeof(int64_t)), SEEK_SET) != 0
                || fread(buf[STEP_IN_IDS], sizeof(int64_t), n, batches) != n
                || fread(buf[STEP_IN_TARGETS], sizeof(int64_t), n, batches) != n)
            die("%s: short file", argv[3]);
        double progress = (double)(s - warmup) / (double)(steps - warmup > 1 ? steps - warmup : 1);
        double lr = s < warmup ? peak * (double)(s + 1) / (double)warmup
                  : peak * (0.1 + 0.9 * 0.5 * (1 + cos(PI * (progress < 1 ? progress : 1))));
        *(float *)buf[STEP_IN_LR] = (float)lr;
        *(float *)buf[STEP_IN_BC1] = (float)(1 / (1 - pow(BETA1, (double)(s + 1))));
        *(float *)buf[STEP_IN_BC2] = (float)(1 / (1 - pow(BETA2, (double)(s + 1))));

        kina_index_error err;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (step_call_checked(call, desc, &err) != KINA_OK) {
            fprintf(stderr, "train_storylm: step %ld: %s index out of bounds: %s[%lld] = %lld, not in [0, %lld) (let %s)\n", s + 1,
                    err.op, args[err.arg].name, (long long)err.element, (long long)err.value, (long long)err.bound, err.let);
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        calls += elapsed_ms(t0, t1);
        printf("step %ld loss %.9g grad_norm %.9g\n", s + 1, *(float *)buf[STEP_OUT_LOSS], *(float *)buf[STEP_OUT_GRAD_NORM]);

        /* The new weights and moments become the next call's inputs: swap the two buffers of each. */
        for (int c = 0; c < ncarried; c++) {
            int i = carried_in[c], k = carried_out[c];
            void *b = buf[i];
            buf[i] = buf[k];
            buf[k] = b;
            kina_memref_bind(desc[i], &args[i], buf[i]);
            kina_memref_bind(desc[k], &args[k], buf[k]);
        }
    }
    if (steps > start) printf("train_storylm: %.2f ms a step in kina_call\n", calls / (double)(steps - start));
    fclose(batches);
    return 0;
}
