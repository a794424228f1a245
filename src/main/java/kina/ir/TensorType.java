package kina.ir;

/** {@code tensor<DTYPE, [d0, …], @placement>}: dtype, static shape, placement. */
public record TensorType(DType dtype, Shape shape, Placement placement) implements Type {
    public TensorType {
        if (dtype == null || shape == null || placement == null) throw new IllegalArgumentException("null component");
    }

    public static TensorType host(DType dtype, long... dims) { return new TensorType(dtype, new Shape(dims), Placement.HOST); }

    public TensorType withShape(Shape s) { return new TensorType(dtype, s, placement); }

    public TensorType withDType(DType d) { return new TensorType(d, shape, placement); }

    public int rank() { return shape.rank(); }

    /** Prints as the surface writes it: {@code tensor<F32, [1, 4, 8], @host>}. */
    @Override public String toString() { return "tensor<" + dtype + ", " + shape + ", " + placement + ">"; }
}
