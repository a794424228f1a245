package kina.mlir;

import java.util.List;

/**
 * The fixed parts of {@link CHeader}'s output: the calling convention in words, the types and
 * helpers every kina header shares (guarded, so several headers can be included together), and the
 * memref descriptor struct of a rank (MLIR's C interface, {@code StridedMemRefType<T, r>}: see
 * mlir.llvm.org/docs/TargetLLVMIR, "C-compatible wrapper emission").
 */
final class CHeaderText {
    private CHeaderText() {}

    /** The calling convention, one comment line each. */
    static final List<String> ABI = List.of(
            "- A rank-r memref descriptor is { void *allocated; void *aligned; int64_t offset;",
            "  int64_t sizes[r]; int64_t strides[r]; } (MLIR's C interface): kina_memref_2d and the like",
            "  below; kina_memref_bind fills one of any rank for a buffer.",
            "- Buffers are dense and row-major: offset 0, strides the suffix products of the shape.",
            "  F32 is float, F64 double, I64 int64_t, I1 one byte holding 0 or 1.",
            "- Align every buffer to KINA_ALIGNMENT (64) bytes. Objects built today rely only on the",
            "  element's own alignment; 64 is what kina's JVM host uses and what later builds may assume.",
            "- The caller allocates every buffer and descriptor and owns them; they need to live only",
            "  for the call. The object reads the inputs and never writes them, writes every element of",
            "  every output, keeps no pointer after it returns, and mallocs and frees its own",
            "  intermediates within the call.",
            "- No output may overlap an input or another output. To carry a value from call to call",
            "  (a train step's weights and moments), keep two buffers for it and swap them each call.",
            "- The object has no global state: calls on distinct buffers may run at once.",
            "- An index out of range: the object checks every index it reads, and on one out of range",
            "  puts(\"<op> index out of bounds\") and calls abort(): the process ends by SIGABRT, and the",
            "  line is lost unless stdout is line-buffered (abort() flushes nothing). kina_call has no",
            "  error return; the check_indices function below checks the index inputs before a call.");

    /** The types and helpers every kina header shares. */
    static final String COMMON = """
            #ifndef KINA_COMMON_V1
            #define KINA_COMMON_V1
            /* Shared by every header kina writes. */

            /* Element types (macros, so that #if can compare them). */
            typedef int kina_dtype;
            #define KINA_F32 0
            #define KINA_F64 1
            #define KINA_I64 2
            #define KINA_I1 3

            /* What check_indices and call_checked answer. */
            #define KINA_OK 0
            #define KINA_ERR_INDEX 1

            /* The alignment asked of every buffer, in bytes. */
            #define KINA_ALIGNMENT 64

            /* The bytes of a rank-r memref descriptor: two pointers, the offset, r sizes, r strides. */
            #define KINA_MEMREF_BYTES(rank) (2 * sizeof(void *) + (1 + 2 * (size_t)(rank)) * sizeof(int64_t))

            /* The entry every kina object exports, and its type (for dlsym). */
            typedef void (*kina_call_fn)(void **argv);
            void kina_call(void **argv);

            /* One input or output of kina_call. */
            typedef struct kina_arg {
                const char *name;      /* the input's name; an output's: the result's let, or out<k> */
                int is_output;         /* 0 for an input, 1 for an output */
                kina_dtype dtype;
                int rank;
                const int64_t *shape;  /* rank sizes, outermost first; NULL for rank 0 */
                int64_t elements;      /* the product of the shape (1 for rank 0) */
                int64_t bytes;         /* elements times kina_dtype_size(dtype) */
            } kina_arg;

            /* The first index out of range that check_indices found. */
            typedef struct kina_index_error {
                int arg;               /* the argv index of the input holding it */
                int64_t element;       /* its row-major position in that input */
                int64_t value;         /* the index */
                int64_t bound;         /* the range it must be in: [0, bound) */
                const char *op;        /* the instruction reading it: gather, take_along_axis, ... */
                const char *let;       /* the let that reads it, with file:line:col */
            } kina_index_error;

            /* Bytes per element. */
            static inline size_t kina_dtype_size(kina_dtype d) {
                return d == KINA_F32 ? 4 : d == KINA_F64 || d == KINA_I64 ? 8 : d == KINA_I1 ? 1 : 0;
            }

            /*
             * Fills the descriptor at desc (KINA_MEMREF_BYTES(a->rank) bytes, aligned for int64_t) for
             * argument a's dense row-major buffer data.
             */
            static inline void kina_memref_bind(void *desc, const kina_arg *a, void *data) {
                unsigned char *d = (unsigned char *)desc;
                int64_t offset = 0, stride = 1;
                memcpy(d, &data, sizeof data);
                memcpy(d + sizeof data, &data, sizeof data);
                d += 2 * sizeof data;
                memcpy(d, &offset, sizeof offset);
                for (int i = a->rank - 1; i >= 0; i--) {
                    memcpy(d + sizeof(int64_t) * (size_t)(1 + i), &a->shape[i], sizeof(int64_t));
                    memcpy(d + sizeof(int64_t) * (size_t)(1 + a->rank + i), &stride, sizeof stride);
                    stride *= a->shape[i];
                }
            }

            /* The first element a descriptor points to: its aligned pointer plus offset elements. */
            static inline void *kina_memref_data(const void *desc, kina_dtype dtype) {
                const unsigned char *d = (const unsigned char *)desc;
                void *aligned;
                int64_t offset;
                memcpy(&aligned, d + sizeof(void *), sizeof aligned);
                memcpy(&offset, d + 2 * sizeof(void *), sizeof offset);
                return (unsigned char *)aligned + offset * (int64_t)kina_dtype_size(dtype);
            }
            #endif /* KINA_COMMON_V1 */

            """;

    /** The descriptor struct of rank r, guarded. */
    static String memref(int r) {
        String name = "kina_memref_" + r + "d", guard = "KINA_MEMREF_" + r + "D_DEFINED";
        return "#ifndef " + guard + "\n#define " + guard + "\n"
                + "/* A rank-" + r + " memref descriptor (see kina_memref_bind). */\n"
                + "typedef struct " + name + " {\n    void *allocated;\n    void *aligned;\n    int64_t offset;\n"
                + (r > 0 ? "    int64_t sizes[" + r + "];\n    int64_t strides[" + r + "];\n" : "")
                + "} " + name + ";\n#endif\n\n";
    }
}
