// kina examples/ad_matmul4.kina: host lowering to linalg on tensors (MLIR 19)
func.func private @f.mm0(%a: tensor<2x4x2xf32>, %b: tensor<2x2x4xf32>, %out: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x4x2 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%zero : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}
func.func private @f(%q: tensor<1x2x4x2xf32>, %k: tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32> {
  %collapse.0 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %collapse.1 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %empty.3 = tensor.empty() : tensor<2x4x4xf32>
  %bmm.2 = func.call @f.mm0(%collapse.0, %collapse.1, %empty.3) : (tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tensor.expand_shape %bmm.2 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  return %s : tensor<1x2x4x4xf32>
}
func.func private @f_grad.mm1(%a: tensor<2x4x2xf32>, %b: tensor<2x2x4xf32>, %out: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x4x2 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%zero : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}
func.func private @f_grad.mm2(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %out: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x2x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%zero : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @f_grad.mm3(%a: tensor<2x2x4xf32>, %b: tensor<2x4x4xf32>, %out: tensor<2x2x4xf32>) -> tensor<2x2x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x2x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x2x4xf32>, tensor<2x4x4xf32>) outs(%zero : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %c : tensor<2x2x4xf32>
}
func.func private @f_grad(%q: tensor<1x2x4x2xf32>, %k: tensor<1x2x2x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) {
  %collapse.0 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %collapse.1 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %empty.3 = tensor.empty() : tensor<2x4x4xf32>
  %bmm.2 = func.call @f_grad.mm1(%collapse.0, %collapse.1, %empty.3) : (tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tensor.expand_shape %bmm.2 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %c.4 = arith.constant 1.0 : f32
  %empty.5 = tensor.empty() : tensor<1x2x4x4xf32>
  %g_s = linalg.fill ins(%c.4 : f32) outs(%empty.5 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %empty.6 = tensor.empty() : tensor<1x2x4x2xf32>
  %t1 = linalg.transpose ins(%k : tensor<1x2x2x4xf32>) outs(%empty.6 : tensor<1x2x4x2xf32>) permutation = [0, 1, 3, 2]
  %collapse.7 = tensor.collapse_shape %g_s [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.8 = tensor.collapse_shape %t1 [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %empty.10 = tensor.empty() : tensor<2x4x2xf32>
  %bmm.9 = func.call @f_grad.mm2(%collapse.7, %collapse.8, %empty.10) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %g_q = tensor.expand_shape %bmm.9 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.11 = tensor.empty() : tensor<1x2x2x4xf32>
  %t3 = linalg.transpose ins(%q : tensor<1x2x4x2xf32>) outs(%empty.11 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %collapse.12 = tensor.collapse_shape %t3 [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %collapse.13 = tensor.collapse_shape %g_s [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %empty.15 = tensor.empty() : tensor<2x2x4xf32>
  %bmm.14 = func.call @f_grad.mm3(%collapse.12, %collapse.13, %empty.15) : (tensor<2x2x4xf32>, tensor<2x4x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %g_k = tensor.expand_shape %bmm.14 [[0, 1], [2], [3]] output_shape [1, 2, 2, 4] : tensor<2x2x4xf32> into tensor<1x2x2x4xf32>
  return %s, %g_q, %g_k : tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>
}
func.func private @main(%in.q: tensor<1x2x4x2xf32>, %in.k: tensor<1x2x2x4xf32>, %dest.0: tensor<1x2x4x4xf32>, %dest.1: tensor<1x2x4x2xf32>, %dest.2: tensor<1x2x2x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) {
  %call.0:3 = func.call @f_grad(%in.q, %in.k) : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>)
  return %call.0#0, %call.0#1, %call.0#2 : tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>
}
func.func @kina_entry(%in.q: tensor<1x2x4x2xf32> {bufferization.writable = false}, %in.k: tensor<1x2x2x4xf32> {bufferization.writable = false}, %out.0: memref<1x2x4x4xf32>, %out.1: memref<1x2x4x2xf32>, %out.2: memref<1x2x2x4xf32>) attributes {llvm.emit_c_interface} {
  %dest.0 = tensor.empty() : tensor<1x2x4x4xf32>
  %dest.1 = tensor.empty() : tensor<1x2x4x2xf32>
  %dest.2 = tensor.empty() : tensor<1x2x2x4xf32>
  %r:3 = func.call @main(%in.q, %in.k, %dest.0, %dest.1, %dest.2) : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>)
  bufferization.materialize_in_destination %r#0 in restrict writable %out.0 : (tensor<1x2x4x4xf32>, memref<1x2x4x4xf32>) -> ()
  bufferization.materialize_in_destination %r#1 in restrict writable %out.1 : (tensor<1x2x4x2xf32>, memref<1x2x4x2xf32>) -> ()
  bufferization.materialize_in_destination %r#2 in restrict writable %out.2 : (tensor<1x2x2x4xf32>, memref<1x2x2x4xf32>) -> ()
  return
}
