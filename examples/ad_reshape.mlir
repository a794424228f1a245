// kina examples/ad_reshape.kina: host lowering to linalg on tensors (MLIR 19)
func.func private @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %flat.0 = tensor.collapse_shape %x [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
  %y = tensor.expand_shape %flat.0 [[0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}
func.func private @f_grad(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %flat.0 = tensor.collapse_shape %x [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
  %y = tensor.expand_shape %flat.0 [[0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
  %c.1 = arith.constant 1.0 : f32
  %empty.2 = tensor.empty() : tensor<3x2xf32>
  %g_y = linalg.fill ins(%c.1 : f32) outs(%empty.2 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %flat.3 = tensor.collapse_shape %g_y [[0, 1]] : tensor<3x2xf32> into tensor<6xf32>
  %g_x = tensor.expand_shape %flat.3 [[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
  return %y, %g_x : tensor<3x2xf32>, tensor<2x3xf32>
}
func.func private @main(%in.x: tensor<2x3xf32>, %dest.0: tensor<3x2xf32>, %dest.1: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %call.0:2 = func.call @f_grad(%in.x) : (tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>)
  return %call.0#0, %call.0#1 : tensor<3x2xf32>, tensor<2x3xf32>
}
func.func @kina_entry(%in.x: tensor<2x3xf32> {bufferization.writable = false}, %out.0: memref<3x2xf32>, %out.1: memref<2x3xf32>) attributes {llvm.emit_c_interface} {
  %dest.0 = tensor.empty() : tensor<3x2xf32>
  %dest.1 = tensor.empty() : tensor<2x3xf32>
  %r:2 = func.call @main(%in.x, %dest.0, %dest.1) : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>)
  bufferization.materialize_in_destination %r#0 in restrict writable %out.0 : (tensor<3x2xf32>, memref<3x2xf32>) -> ()
  bufferization.materialize_in_destination %r#1 in restrict writable %out.1 : (tensor<2x3xf32>, memref<2x3xf32>) -> ()
  return
}
