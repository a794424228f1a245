// kina examples/ad_gather.kina: host lowering to linalg on tensors (MLIR 19)
func.func private @f(%ids: tensor<1x4xi64>, %emb: tensor<8x4xf32>) -> tensor<1x4x4xf32> {
  %c.2 = arith.constant true
  %empty.3 = tensor.empty() : tensor<i1>
  %init.1 = linalg.fill ins(%c.2 : i1) outs(%empty.3 : tensor<i1>) -> tensor<i1>
  %inbounds.0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%ids : tensor<1x4xi64>) outs(%init.1 : tensor<i1>) {
  ^bb0(%in.4: i64, %out.5: i1):
    %b.6 = arith.constant 0 : i64
    %b.7 = arith.cmpi sge, %in.4, %b.6 : i64
    %b.8 = arith.constant 8 : i64
    %b.9 = arith.cmpi slt, %in.4, %b.8 : i64
    %b.10 = arith.andi %b.7, %b.9 : i1
    %b.11 = arith.andi %out.5, %b.10 : i1
    linalg.yield %b.11 : i1
  } -> tensor<i1>
  %ok.12 = tensor.extract %inbounds.0[] : tensor<i1>
  cf.assert %ok.12, "gather index out of bounds"
  %empty.13 = tensor.empty() : tensor<1x4x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x4xi64>) outs(%empty.13 : tensor<1x4x4xf32>) {
  ^bb0(%in.14: i64, %out.15: f32):
    %b.16 = arith.index_cast %in.14 : i64 to index
    %b.17 = linalg.index 2 : index
    %b.18 = tensor.extract %emb[%b.16, %b.17] : tensor<8x4xf32>
    linalg.yield %b.18 : f32
  } -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}
func.func private @f_grad(%ids: tensor<1x4xi64>, %emb: tensor<8x4xf32>) -> (tensor<1x4x4xf32>, tensor<8x4xf32>) {
  %c.2 = arith.constant true
  %empty.3 = tensor.empty() : tensor<i1>
  %init.1 = linalg.fill ins(%c.2 : i1) outs(%empty.3 : tensor<i1>) -> tensor<i1>
  %inbounds.0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%ids : tensor<1x4xi64>) outs(%init.1 : tensor<i1>) {
  ^bb0(%in.4: i64, %out.5: i1):
    %b.6 = arith.constant 0 : i64
    %b.7 = arith.cmpi sge, %in.4, %b.6 : i64
    %b.8 = arith.constant 8 : i64
    %b.9 = arith.cmpi slt, %in.4, %b.8 : i64
    %b.10 = arith.andi %b.7, %b.9 : i1
    %b.11 = arith.andi %out.5, %b.10 : i1
    linalg.yield %b.11 : i1
  } -> tensor<i1>
  %ok.12 = tensor.extract %inbounds.0[] : tensor<i1>
  cf.assert %ok.12, "gather index out of bounds"
  %empty.13 = tensor.empty() : tensor<1x4x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x4xi64>) outs(%empty.13 : tensor<1x4x4xf32>) {
  ^bb0(%in.14: i64, %out.15: f32):
    %b.16 = arith.index_cast %in.14 : i64 to index
    %b.17 = linalg.index 2 : index
    %b.18 = tensor.extract %emb[%b.16, %b.17] : tensor<8x4xf32>
    linalg.yield %b.18 : f32
  } -> tensor<1x4x4xf32>
  %c.19 = arith.constant 1.0 : f32
  %empty.20 = tensor.empty() : tensor<1x4x4xf32>
  %g_y = linalg.fill ins(%c.19 : f32) outs(%empty.20 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c.23 = arith.constant true
  %empty.24 = tensor.empty() : tensor<i1>
  %init.22 = linalg.fill ins(%c.23 : i1) outs(%empty.24 : tensor<i1>) -> tensor<i1>
  %inbounds.21 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%ids : tensor<1x4xi64>) outs(%init.22 : tensor<i1>) {
  ^bb0(%in.25: i64, %out.26: i1):
    %b.27 = arith.constant 0 : i64
    %b.28 = arith.cmpi sge, %in.25, %b.27 : i64
    %b.29 = arith.constant 8 : i64
    %b.30 = arith.cmpi slt, %in.25, %b.29 : i64
    %b.31 = arith.andi %b.28, %b.30 : i1
    %b.32 = arith.andi %out.26, %b.31 : i1
    linalg.yield %b.32 : i1
  } -> tensor<i1>
  %ok.33 = tensor.extract %inbounds.21[] : tensor<i1>
  cf.assert %ok.33, "scatter_add index out of bounds"
  %collapse.34 = tensor.collapse_shape %ids [[0, 1]] : tensor<1x4xi64> into tensor<4xi64>
  %collapse.35 = tensor.collapse_shape %g_y [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %c.37 = arith.constant 0.0 : f32
  %empty.38 = tensor.empty() : tensor<8x4xf32>
  %init.36 = linalg.fill ins(%c.37 : f32) outs(%empty.38 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %g_emb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"], kina.scatter} ins(%collapse.34, %collapse.35 : tensor<4xi64>, tensor<4x4xf32>) outs(%init.36 : tensor<8x4xf32>) {
  ^bb0(%in.39: i64, %in.40: f32, %out.41: f32):
    %b.42 = linalg.index 0 : index
    %b.43 = arith.index_cast %b.42 : index to i64
    %b.44 = arith.cmpi eq, %in.39, %b.43 : i64
    %b.45 = arith.constant 0.0 : f32
    %b.46 = arith.select %b.44, %in.40, %b.45 : f32
    %b.47 = arith.addf %out.41, %b.46 : f32
    linalg.yield %b.47 : f32
  } -> tensor<8x4xf32>
  return %y, %g_emb : tensor<1x4x4xf32>, tensor<8x4xf32>
}
func.func private @main(%in.ids: tensor<1x4xi64>, %in.emb: tensor<8x4xf32>, %dest.0: tensor<1x4x4xf32>, %dest.1: tensor<8x4xf32>) -> (tensor<1x4x4xf32>, tensor<8x4xf32>) {
  %call.0:2 = func.call @f_grad(%in.ids, %in.emb) : (tensor<1x4xi64>, tensor<8x4xf32>) -> (tensor<1x4x4xf32>, tensor<8x4xf32>)
  return %call.0#0, %call.0#1 : tensor<1x4x4xf32>, tensor<8x4xf32>
}
func.func @kina_entry(%in.ids: tensor<1x4xi64> {bufferization.writable = false}, %in.emb: tensor<8x4xf32> {bufferization.writable = false}, %out.0: memref<1x4x4xf32>, %out.1: memref<8x4xf32>) attributes {llvm.emit_c_interface} {
  %dest.0 = tensor.empty() : tensor<1x4x4xf32>
  %dest.1 = tensor.empty() : tensor<8x4xf32>
  %r:2 = func.call @main(%in.ids, %in.emb, %dest.0, %dest.1) : (tensor<1x4xi64>, tensor<8x4xf32>, tensor<1x4x4xf32>, tensor<8x4xf32>) -> (tensor<1x4x4xf32>, tensor<8x4xf32>)
  bufferization.materialize_in_destination %r#0 in restrict writable %out.0 : (tensor<1x4x4xf32>, memref<1x4x4xf32>) -> ()
  bufferization.materialize_in_destination %r#1 in restrict writable %out.1 : (tensor<8x4xf32>, memref<8x4xf32>) -> ()
  return
}
