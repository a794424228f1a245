// kina examples/storylm0_ad_step.kina: host lowering to linalg on tensors (MLIR 19)
func.func private @storylm0_fwd.mm0(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd.mm1(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd.mm2(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd.mm3(%a: tensor<2x4x2xf32>, %b: tensor<2x2x4xf32>, %out: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x4x2 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%zero : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}
func.func private @storylm0_fwd.mm4(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %out: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x2x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%zero : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @storylm0_fwd.mm5(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd.mm6(%a: tensor<1x4x4xf32>, %b: tensor<1x4x8xf32>, %out: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x8x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x8xf32>) outs(%zero : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %c : tensor<1x4x8xf32>
}
func.func private @storylm0_fwd(%token_ids: tensor<1x4xi64>, %emb: tensor<8x4xf32>, %mask: tensor<1x1x4x4xf32>, %scale: tensor<1x1x1x1xf32>, %wq: tensor<4x4xf32>, %wk: tensor<4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %lm_head: tensor<4x8xf32>) -> tensor<1x4x8xf32> {
  %c.2 = arith.constant true
  %empty.3 = tensor.empty() : tensor<i1>
  %init.1 = linalg.fill ins(%c.2 : i1) outs(%empty.3 : tensor<i1>) -> tensor<i1>
  %inbounds.0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%token_ids : tensor<1x4xi64>) outs(%init.1 : tensor<i1>) {
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
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%token_ids : tensor<1x4xi64>) outs(%empty.13 : tensor<1x4x4xf32>) {
  ^bb0(%in.14: i64, %out.15: f32):
    %b.16 = arith.index_cast %in.14 : i64 to index
    %b.17 = linalg.index 2 : index
    %b.18 = tensor.extract %emb[%b.16, %b.17] : tensor<8x4xf32>
    linalg.yield %b.18 : f32
  } -> tensor<1x4x4xf32>
  %wq3 = tensor.expand_shape %wq [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %wk3 = tensor.expand_shape %wk [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %wv3 = tensor.expand_shape %wv [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %empty.19 = tensor.empty() : tensor<1x4x4xf32>
  %q = func.call @storylm0_fwd.mm0(%x, %wq3, %empty.19) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.20 = tensor.empty() : tensor<1x4x4xf32>
  %k = func.call @storylm0_fwd.mm1(%x, %wk3, %empty.20) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.21 = tensor.empty() : tensor<1x4x4xf32>
  %v = func.call @storylm0_fwd.mm2(%x, %wv3, %empty.21) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %q4 = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.22 = tensor.empty() : tensor<1x2x4x2xf32>
  %qh = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%empty.22 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %k4 = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.23 = tensor.empty() : tensor<1x2x4x2xf32>
  %kh = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%empty.23 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %empty.24 = tensor.empty() : tensor<1x2x2x4xf32>
  %kt = linalg.transpose ins(%kh : tensor<1x2x4x2xf32>) outs(%empty.24 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %v4 = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.25 = tensor.empty() : tensor<1x2x4x2xf32>
  %vh = linalg.transpose ins(%v4 : tensor<1x4x2x2xf32>) outs(%empty.25 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %collapse.26 = tensor.collapse_shape %qh [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %collapse.27 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %empty.29 = tensor.empty() : tensor<2x4x4xf32>
  %bmm.28 = func.call @storylm0_fwd.mm3(%collapse.26, %collapse.27, %empty.29) : (tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tensor.expand_shape %bmm.28 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %empty.30 = tensor.empty() : tensor<1x2x4x4xf32>
  %scale_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scale : tensor<1x1x1x1xf32>) outs(%empty.30 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.31: f32, %out.32: f32):
    linalg.yield %in.31 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.33 = tensor.empty() : tensor<1x2x4x4xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %scale_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.33 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.34: f32, %in.35: f32, %out.36: f32):
    %b.37 = arith.mulf %in.34, %in.35 : f32
    linalg.yield %b.37 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.38 = tensor.empty() : tensor<1x2x4x4xf32>
  %mask_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask : tensor<1x1x4x4xf32>) outs(%empty.38 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.39: f32, %out.40: f32):
    linalg.yield %in.39 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.41 = tensor.empty() : tensor<1x2x4x4xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ss, %mask_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.41 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.42: f32, %in.43: f32, %out.44: f32):
    %b.45 = arith.addf %in.42, %in.43 : f32
    linalg.yield %b.45 : f32
  } -> tensor<1x2x4x4xf32>
  %c.48 = arith.constant 0xFF800000 : f32
  %empty.49 = tensor.empty() : tensor<1x2x4xf32>
  %init.47 = linalg.fill ins(%c.48 : f32) outs(%empty.49 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %max.46 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm : tensor<1x2x4x4xf32>) outs(%init.47 : tensor<1x2x4xf32>) {
  ^bb0(%in.50: f32, %out.51: f32):
    %b.52 = arith.maximumf %in.50, %out.51 : f32
    linalg.yield %b.52 : f32
  } -> tensor<1x2x4xf32>
  %c.55 = arith.constant 0.0 : f32
  %empty.56 = tensor.empty() : tensor<1x2x4xf32>
  %init.54 = linalg.fill ins(%c.55 : f32) outs(%empty.56 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %expsum.53 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm, %max.46 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%init.54 : tensor<1x2x4xf32>) {
  ^bb0(%in.57: f32, %in.58: f32, %out.59: f32):
    %b.60 = arith.subf %in.57, %in.58 : f32
    %b.61 = math.exp %b.60 : f32
    %b.62 = arith.addf %out.59, %b.61 fastmath<reassoc> : f32
    linalg.yield %b.62 : f32
  } -> tensor<1x2x4xf32>
  %empty.63 = tensor.empty() : tensor<1x2x4x4xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sm, %max.46, %expsum.53 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) outs(%empty.63 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.64: f32, %in.65: f32, %in.66: f32, %out.67: f32):
    %b.68 = arith.subf %in.64, %in.65 : f32
    %b.69 = math.exp %b.68 : f32
    %b.70 = arith.divf %b.69, %in.66 : f32
    linalg.yield %b.70 : f32
  } -> tensor<1x2x4x4xf32>
  %collapse.71 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.72 = tensor.collapse_shape %vh [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %empty.74 = tensor.empty() : tensor<2x4x2xf32>
  %bmm.73 = func.call @storylm0_fwd.mm4(%collapse.71, %collapse.72, %empty.74) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %a = tensor.expand_shape %bmm.73 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.75 = tensor.empty() : tensor<1x4x2x2xf32>
  %at = linalg.transpose ins(%a : tensor<1x2x4x2xf32>) outs(%empty.75 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %m = tensor.collapse_shape %at [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %wo3 = tensor.expand_shape %wo [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %empty.76 = tensor.empty() : tensor<1x4x4xf32>
  %o = func.call @storylm0_fwd.mm5(%m, %wo3, %empty.76) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %lm3 = tensor.expand_shape %lm_head [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %empty.77 = tensor.empty() : tensor<1x4x8xf32>
  %logits = func.call @storylm0_fwd.mm6(%o, %lm3, %empty.77) : (tensor<1x4x4xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %logits : tensor<1x4x8xf32>
}
func.func private @storylm0_fwd_grad.mm7(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm8(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm9(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm10(%a: tensor<2x4x2xf32>, %b: tensor<2x2x4xf32>, %out: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x4x2 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%zero : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm11(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %out: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x2x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%zero : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @storylm0_fwd_grad.mm12(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm13(%a: tensor<1x4x4xf32>, %b: tensor<1x4x8xf32>, %out: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x8x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x8xf32>) outs(%zero : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %c : tensor<1x4x8xf32>
}
func.func private @storylm0_fwd_grad.mm14(%a: tensor<1x4x8xf32>, %b: tensor<1x8x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x8 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x8x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm15(%a: tensor<1x4x4xf32>, %b: tensor<1x4x8xf32>, %out: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x8x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x8xf32>) outs(%zero : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %c : tensor<1x4x8xf32>
}
func.func private @storylm0_fwd_grad.mm16(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm17(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm18(%a: tensor<2x4x2xf32>, %b: tensor<2x2x4xf32>, %out: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x4x2 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%zero : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm19(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %out: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x2x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%zero : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @storylm0_fwd_grad.mm20(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %out: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x4x2x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%zero : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @storylm0_fwd_grad.mm21(%a: tensor<2x2x4xf32>, %b: tensor<2x4x4xf32>, %out: tensor<2x2x4xf32>) -> tensor<2x2x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 2x2x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x2x4xf32>, tensor<2x4x4xf32>) outs(%zero : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %c : tensor<2x2x4xf32>
}
func.func private @storylm0_fwd_grad.mm22(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm23(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm24(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm25(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm26(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm27(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %out: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.schedule = "linalg.batch_matmul 1x4x4x4 f32"} {
  %c.0 = arith.constant 0.0 : f32
  %zero = linalg.fill ins(%c.0 : f32) outs(%out : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%zero : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad(%token_ids: tensor<1x4xi64>, %emb: tensor<8x4xf32>, %mask: tensor<1x1x4x4xf32>, %scale: tensor<1x1x1x1xf32>, %wq: tensor<4x4xf32>, %wk: tensor<4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %lm_head: tensor<4x8xf32>) -> (tensor<1x4x8xf32>, tensor<8x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>) {
  %c.2 = arith.constant true
  %empty.3 = tensor.empty() : tensor<i1>
  %init.1 = linalg.fill ins(%c.2 : i1) outs(%empty.3 : tensor<i1>) -> tensor<i1>
  %inbounds.0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%token_ids : tensor<1x4xi64>) outs(%init.1 : tensor<i1>) {
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
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%token_ids : tensor<1x4xi64>) outs(%empty.13 : tensor<1x4x4xf32>) {
  ^bb0(%in.14: i64, %out.15: f32):
    %b.16 = arith.index_cast %in.14 : i64 to index
    %b.17 = linalg.index 2 : index
    %b.18 = tensor.extract %emb[%b.16, %b.17] : tensor<8x4xf32>
    linalg.yield %b.18 : f32
  } -> tensor<1x4x4xf32>
  %wq3 = tensor.expand_shape %wq [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %wk3 = tensor.expand_shape %wk [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %wv3 = tensor.expand_shape %wv [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %empty.19 = tensor.empty() : tensor<1x4x4xf32>
  %q = func.call @storylm0_fwd_grad.mm7(%x, %wq3, %empty.19) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.20 = tensor.empty() : tensor<1x4x4xf32>
  %k = func.call @storylm0_fwd_grad.mm8(%x, %wk3, %empty.20) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.21 = tensor.empty() : tensor<1x4x4xf32>
  %v = func.call @storylm0_fwd_grad.mm9(%x, %wv3, %empty.21) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %q4 = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.22 = tensor.empty() : tensor<1x2x4x2xf32>
  %qh = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%empty.22 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %k4 = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.23 = tensor.empty() : tensor<1x2x4x2xf32>
  %kh = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%empty.23 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %empty.24 = tensor.empty() : tensor<1x2x2x4xf32>
  %kt = linalg.transpose ins(%kh : tensor<1x2x4x2xf32>) outs(%empty.24 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %v4 = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.25 = tensor.empty() : tensor<1x2x4x2xf32>
  %vh = linalg.transpose ins(%v4 : tensor<1x4x2x2xf32>) outs(%empty.25 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %collapse.26 = tensor.collapse_shape %qh [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %collapse.27 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %empty.29 = tensor.empty() : tensor<2x4x4xf32>
  %bmm.28 = func.call @storylm0_fwd_grad.mm10(%collapse.26, %collapse.27, %empty.29) : (tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tensor.expand_shape %bmm.28 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %empty.30 = tensor.empty() : tensor<1x2x4x4xf32>
  %scale_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scale : tensor<1x1x1x1xf32>) outs(%empty.30 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.31: f32, %out.32: f32):
    linalg.yield %in.31 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.33 = tensor.empty() : tensor<1x2x4x4xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %scale_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.33 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.34: f32, %in.35: f32, %out.36: f32):
    %b.37 = arith.mulf %in.34, %in.35 : f32
    linalg.yield %b.37 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.38 = tensor.empty() : tensor<1x2x4x4xf32>
  %mask_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask : tensor<1x1x4x4xf32>) outs(%empty.38 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.39: f32, %out.40: f32):
    linalg.yield %in.39 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.41 = tensor.empty() : tensor<1x2x4x4xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ss, %mask_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.41 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.42: f32, %in.43: f32, %out.44: f32):
    %b.45 = arith.addf %in.42, %in.43 : f32
    linalg.yield %b.45 : f32
  } -> tensor<1x2x4x4xf32>
  %c.48 = arith.constant 0xFF800000 : f32
  %empty.49 = tensor.empty() : tensor<1x2x4xf32>
  %init.47 = linalg.fill ins(%c.48 : f32) outs(%empty.49 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %max.46 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm : tensor<1x2x4x4xf32>) outs(%init.47 : tensor<1x2x4xf32>) {
  ^bb0(%in.50: f32, %out.51: f32):
    %b.52 = arith.maximumf %in.50, %out.51 : f32
    linalg.yield %b.52 : f32
  } -> tensor<1x2x4xf32>
  %c.55 = arith.constant 0.0 : f32
  %empty.56 = tensor.empty() : tensor<1x2x4xf32>
  %init.54 = linalg.fill ins(%c.55 : f32) outs(%empty.56 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %expsum.53 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm, %max.46 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%init.54 : tensor<1x2x4xf32>) {
  ^bb0(%in.57: f32, %in.58: f32, %out.59: f32):
    %b.60 = arith.subf %in.57, %in.58 : f32
    %b.61 = math.exp %b.60 : f32
    %b.62 = arith.addf %out.59, %b.61 fastmath<reassoc> : f32
    linalg.yield %b.62 : f32
  } -> tensor<1x2x4xf32>
  %empty.63 = tensor.empty() : tensor<1x2x4x4xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sm, %max.46, %expsum.53 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) outs(%empty.63 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.64: f32, %in.65: f32, %in.66: f32, %out.67: f32):
    %b.68 = arith.subf %in.64, %in.65 : f32
    %b.69 = math.exp %b.68 : f32
    %b.70 = arith.divf %b.69, %in.66 : f32
    linalg.yield %b.70 : f32
  } -> tensor<1x2x4x4xf32>
  %collapse.71 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.72 = tensor.collapse_shape %vh [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %empty.74 = tensor.empty() : tensor<2x4x2xf32>
  %bmm.73 = func.call @storylm0_fwd_grad.mm11(%collapse.71, %collapse.72, %empty.74) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %a = tensor.expand_shape %bmm.73 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.75 = tensor.empty() : tensor<1x4x2x2xf32>
  %at = linalg.transpose ins(%a : tensor<1x2x4x2xf32>) outs(%empty.75 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %m = tensor.collapse_shape %at [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %wo3 = tensor.expand_shape %wo [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %empty.76 = tensor.empty() : tensor<1x4x4xf32>
  %o = func.call @storylm0_fwd_grad.mm12(%m, %wo3, %empty.76) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %lm3 = tensor.expand_shape %lm_head [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %empty.77 = tensor.empty() : tensor<1x4x8xf32>
  %logits = func.call @storylm0_fwd_grad.mm13(%o, %lm3, %empty.77) : (tensor<1x4x4xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %c.78 = arith.constant 1.0 : f32
  %empty.79 = tensor.empty() : tensor<1x4x8xf32>
  %g_logits = linalg.fill ins(%c.78 : f32) outs(%empty.79 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %empty.80 = tensor.empty() : tensor<1x8x4xf32>
  %t1 = linalg.transpose ins(%lm3 : tensor<1x4x8xf32>) outs(%empty.80 : tensor<1x8x4xf32>) permutation = [0, 2, 1]
  %empty.81 = tensor.empty() : tensor<1x4x4xf32>
  %g_o = func.call @storylm0_fwd_grad.mm14(%g_logits, %t1, %empty.81) : (tensor<1x4x8xf32>, tensor<1x8x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.82 = tensor.empty() : tensor<1x4x4xf32>
  %t3 = linalg.transpose ins(%o : tensor<1x4x4xf32>) outs(%empty.82 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.83 = tensor.empty() : tensor<1x4x8xf32>
  %g_lm3 = func.call @storylm0_fwd_grad.mm15(%t3, %g_logits, %empty.83) : (tensor<1x4x4xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %g_lm_head = tensor.collapse_shape %g_lm3 [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  %empty.84 = tensor.empty() : tensor<1x4x4xf32>
  %t6 = linalg.transpose ins(%wo3 : tensor<1x4x4xf32>) outs(%empty.84 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.85 = tensor.empty() : tensor<1x4x4xf32>
  %g_m = func.call @storylm0_fwd_grad.mm16(%g_o, %t6, %empty.85) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.86 = tensor.empty() : tensor<1x4x4xf32>
  %t8 = linalg.transpose ins(%m : tensor<1x4x4xf32>) outs(%empty.86 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.87 = tensor.empty() : tensor<1x4x4xf32>
  %g_wo3 = func.call @storylm0_fwd_grad.mm17(%t8, %g_o, %empty.87) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_wo = tensor.collapse_shape %g_wo3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %g_at = tensor.expand_shape %g_m [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.88 = tensor.empty() : tensor<1x2x4x2xf32>
  %g_a = linalg.transpose ins(%g_at : tensor<1x4x2x2xf32>) outs(%empty.88 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %empty.89 = tensor.empty() : tensor<1x2x2x4xf32>
  %t13 = linalg.transpose ins(%vh : tensor<1x2x4x2xf32>) outs(%empty.89 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %collapse.90 = tensor.collapse_shape %g_a [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %collapse.91 = tensor.collapse_shape %t13 [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %empty.93 = tensor.empty() : tensor<2x4x4xf32>
  %bmm.92 = func.call @storylm0_fwd_grad.mm18(%collapse.90, %collapse.91, %empty.93) : (tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %g_p = tensor.expand_shape %bmm.92 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %empty.94 = tensor.empty() : tensor<1x2x4x4xf32>
  %t15 = linalg.transpose ins(%p : tensor<1x2x4x4xf32>) outs(%empty.94 : tensor<1x2x4x4xf32>) permutation = [0, 1, 3, 2]
  %collapse.95 = tensor.collapse_shape %t15 [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.96 = tensor.collapse_shape %g_a [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %empty.98 = tensor.empty() : tensor<2x4x2xf32>
  %bmm.97 = func.call @storylm0_fwd_grad.mm19(%collapse.95, %collapse.96, %empty.98) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %g_vh = tensor.expand_shape %bmm.97 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.99 = tensor.empty() : tensor<1x2x4x4xf32>
  %t17 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g_p, %p : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.99 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.100: f32, %in.101: f32, %out.102: f32):
    %b.103 = arith.mulf %in.100, %in.101 : f32
    linalg.yield %b.103 : f32
  } -> tensor<1x2x4x4xf32>
  %c.106 = arith.constant 0.0 : f32
  %empty.107 = tensor.empty() : tensor<1x2x4xf32>
  %init.105 = linalg.fill ins(%c.106 : f32) outs(%empty.107 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %sum.104 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t17 : tensor<1x2x4x4xf32>) outs(%init.105 : tensor<1x2x4xf32>) {
  ^bb0(%in.108: f32, %out.109: f32):
    %b.110 = arith.addf %out.109, %in.108 fastmath<reassoc> : f32
    linalg.yield %b.110 : f32
  } -> tensor<1x2x4xf32>
  %t18 = tensor.expand_shape %sum.104 [[0], [1], [2, 3]] output_shape [1, 2, 4, 1] : tensor<1x2x4xf32> into tensor<1x2x4x1xf32>
  %empty.111 = tensor.empty() : tensor<1x2x4x4xf32>
  %t19 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t18 : tensor<1x2x4x1xf32>) outs(%empty.111 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.112: f32, %out.113: f32):
    linalg.yield %in.112 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.114 = tensor.empty() : tensor<1x2x4x4xf32>
  %t20 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g_p, %t19 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.114 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.115: f32, %in.116: f32, %out.117: f32):
    %b.118 = arith.subf %in.115, %in.116 : f32
    linalg.yield %b.118 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.119 = tensor.empty() : tensor<1x2x4x4xf32>
  %g_sm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %t20 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.119 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.120: f32, %in.121: f32, %out.122: f32):
    %b.123 = arith.mulf %in.120, %in.121 : f32
    linalg.yield %b.123 : f32
  } -> tensor<1x2x4x4xf32>
  %c.126 = arith.constant 0.0 : f32
  %empty.127 = tensor.empty() : tensor<1x4x4xf32>
  %init.125 = linalg.fill ins(%c.126 : f32) outs(%empty.127 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %sum.124 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%g_sm : tensor<1x2x4x4xf32>) outs(%init.125 : tensor<1x4x4xf32>) {
  ^bb0(%in.128: f32, %out.129: f32):
    %b.130 = arith.addf %out.129, %in.128 fastmath<reassoc> : f32
    linalg.yield %b.130 : f32
  } -> tensor<1x4x4xf32>
  %g_mask = tensor.expand_shape %sum.124 [[0], [1, 2], [3]] output_shape [1, 1, 4, 4] : tensor<1x4x4xf32> into tensor<1x1x4x4xf32>
  %empty.131 = tensor.empty() : tensor<1x2x4x4xf32>
  %g_s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g_sm, %scale_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.131 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.132: f32, %in.133: f32, %out.134: f32):
    %b.135 = arith.mulf %in.132, %in.133 : f32
    linalg.yield %b.135 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.136 = tensor.empty() : tensor<1x2x4x4xf32>
  %g_scale_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g_sm, %s : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.136 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.137: f32, %in.138: f32, %out.139: f32):
    %b.140 = arith.mulf %in.137, %in.138 : f32
    linalg.yield %b.140 : f32
  } -> tensor<1x2x4x4xf32>
  %c.143 = arith.constant 0.0 : f32
  %empty.144 = tensor.empty() : tensor<1x4x4xf32>
  %init.142 = linalg.fill ins(%c.143 : f32) outs(%empty.144 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %sum.141 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%g_scale_b : tensor<1x2x4x4xf32>) outs(%init.142 : tensor<1x4x4xf32>) {
  ^bb0(%in.145: f32, %out.146: f32):
    %b.147 = arith.addf %out.146, %in.145 fastmath<reassoc> : f32
    linalg.yield %b.147 : f32
  } -> tensor<1x4x4xf32>
  %t25 = tensor.expand_shape %sum.141 [[0], [1, 2], [3]] output_shape [1, 1, 4, 4] : tensor<1x4x4xf32> into tensor<1x1x4x4xf32>
  %c.150 = arith.constant 0.0 : f32
  %empty.151 = tensor.empty() : tensor<1x1x4xf32>
  %init.149 = linalg.fill ins(%c.150 : f32) outs(%empty.151 : tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
  %sum.148 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%t25 : tensor<1x1x4x4xf32>) outs(%init.149 : tensor<1x1x4xf32>) {
  ^bb0(%in.152: f32, %out.153: f32):
    %b.154 = arith.addf %out.153, %in.152 fastmath<reassoc> : f32
    linalg.yield %b.154 : f32
  } -> tensor<1x1x4xf32>
  %t26 = tensor.expand_shape %sum.148 [[0], [1], [2, 3]] output_shape [1, 1, 1, 4] : tensor<1x1x4xf32> into tensor<1x1x1x4xf32>
  %c.157 = arith.constant 0.0 : f32
  %empty.158 = tensor.empty() : tensor<1x1x1xf32>
  %init.156 = linalg.fill ins(%c.157 : f32) outs(%empty.158 : tensor<1x1x1xf32>) -> tensor<1x1x1xf32>
  %sum.155 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t26 : tensor<1x1x1x4xf32>) outs(%init.156 : tensor<1x1x1xf32>) {
  ^bb0(%in.159: f32, %out.160: f32):
    %b.161 = arith.addf %out.160, %in.159 fastmath<reassoc> : f32
    linalg.yield %b.161 : f32
  } -> tensor<1x1x1xf32>
  %g_scale = tensor.expand_shape %sum.155 [[0], [1], [2, 3]] output_shape [1, 1, 1, 1] : tensor<1x1x1xf32> into tensor<1x1x1x1xf32>
  %empty.162 = tensor.empty() : tensor<1x2x4x2xf32>
  %t28 = linalg.transpose ins(%kt : tensor<1x2x2x4xf32>) outs(%empty.162 : tensor<1x2x4x2xf32>) permutation = [0, 1, 3, 2]
  %collapse.163 = tensor.collapse_shape %g_s [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.164 = tensor.collapse_shape %t28 [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %empty.166 = tensor.empty() : tensor<2x4x2xf32>
  %bmm.165 = func.call @storylm0_fwd_grad.mm20(%collapse.163, %collapse.164, %empty.166) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %g_qh = tensor.expand_shape %bmm.165 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.167 = tensor.empty() : tensor<1x2x2x4xf32>
  %t30 = linalg.transpose ins(%qh : tensor<1x2x4x2xf32>) outs(%empty.167 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %collapse.168 = tensor.collapse_shape %t30 [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %collapse.169 = tensor.collapse_shape %g_s [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %empty.171 = tensor.empty() : tensor<2x2x4xf32>
  %bmm.170 = func.call @storylm0_fwd_grad.mm21(%collapse.168, %collapse.169, %empty.171) : (tensor<2x2x4xf32>, tensor<2x4x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %g_kt = tensor.expand_shape %bmm.170 [[0, 1], [2], [3]] output_shape [1, 2, 2, 4] : tensor<2x2x4xf32> into tensor<1x2x2x4xf32>
  %empty.172 = tensor.empty() : tensor<1x4x2x2xf32>
  %g_v4 = linalg.transpose ins(%g_vh : tensor<1x2x4x2xf32>) outs(%empty.172 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %g_v = tensor.collapse_shape %g_v4 [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %empty.173 = tensor.empty() : tensor<1x2x4x2xf32>
  %g_kh = linalg.transpose ins(%g_kt : tensor<1x2x2x4xf32>) outs(%empty.173 : tensor<1x2x4x2xf32>) permutation = [0, 1, 3, 2]
  %empty.174 = tensor.empty() : tensor<1x4x2x2xf32>
  %g_k4 = linalg.transpose ins(%g_kh : tensor<1x2x4x2xf32>) outs(%empty.174 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %g_k = tensor.collapse_shape %g_k4 [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %empty.175 = tensor.empty() : tensor<1x4x2x2xf32>
  %g_q4 = linalg.transpose ins(%g_qh : tensor<1x2x4x2xf32>) outs(%empty.175 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %g_q = tensor.collapse_shape %g_q4 [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %empty.176 = tensor.empty() : tensor<1x4x4xf32>
  %t39 = linalg.transpose ins(%wv3 : tensor<1x4x4xf32>) outs(%empty.176 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.177 = tensor.empty() : tensor<1x4x4xf32>
  %g_x = func.call @storylm0_fwd_grad.mm22(%g_v, %t39, %empty.177) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.178 = tensor.empty() : tensor<1x4x4xf32>
  %t41 = linalg.transpose ins(%x : tensor<1x4x4xf32>) outs(%empty.178 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.179 = tensor.empty() : tensor<1x4x4xf32>
  %g_wv3 = func.call @storylm0_fwd_grad.mm23(%t41, %g_v, %empty.179) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.180 = tensor.empty() : tensor<1x4x4xf32>
  %t43 = linalg.transpose ins(%wk3 : tensor<1x4x4xf32>) outs(%empty.180 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.181 = tensor.empty() : tensor<1x4x4xf32>
  %t44 = func.call @storylm0_fwd_grad.mm24(%g_k, %t43, %empty.181) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.182 = tensor.empty() : tensor<1x4x4xf32>
  %t45 = linalg.transpose ins(%x : tensor<1x4x4xf32>) outs(%empty.182 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.183 = tensor.empty() : tensor<1x4x4xf32>
  %g_wk3 = func.call @storylm0_fwd_grad.mm25(%t45, %g_k, %empty.183) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.184 = tensor.empty() : tensor<1x4x4xf32>
  %g_x_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g_x, %t44 : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%empty.184 : tensor<1x4x4xf32>) {
  ^bb0(%in.185: f32, %in.186: f32, %out.187: f32):
    %b.188 = arith.addf %in.185, %in.186 : f32
    linalg.yield %b.188 : f32
  } -> tensor<1x4x4xf32>
  %empty.189 = tensor.empty() : tensor<1x4x4xf32>
  %t48 = linalg.transpose ins(%wq3 : tensor<1x4x4xf32>) outs(%empty.189 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.190 = tensor.empty() : tensor<1x4x4xf32>
  %t49 = func.call @storylm0_fwd_grad.mm26(%g_q, %t48, %empty.190) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.191 = tensor.empty() : tensor<1x4x4xf32>
  %t50 = linalg.transpose ins(%x : tensor<1x4x4xf32>) outs(%empty.191 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %empty.192 = tensor.empty() : tensor<1x4x4xf32>
  %g_wq3 = func.call @storylm0_fwd_grad.mm27(%t50, %g_q, %empty.192) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.193 = tensor.empty() : tensor<1x4x4xf32>
  %g_x_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g_x_1, %t49 : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%empty.193 : tensor<1x4x4xf32>) {
  ^bb0(%in.194: f32, %in.195: f32, %out.196: f32):
    %b.197 = arith.addf %in.194, %in.195 : f32
    linalg.yield %b.197 : f32
  } -> tensor<1x4x4xf32>
  %g_wv = tensor.collapse_shape %g_wv3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %g_wk = tensor.collapse_shape %g_wk3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %g_wq = tensor.collapse_shape %g_wq3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %c.200 = arith.constant true
  %empty.201 = tensor.empty() : tensor<i1>
  %init.199 = linalg.fill ins(%c.200 : i1) outs(%empty.201 : tensor<i1>) -> tensor<i1>
  %inbounds.198 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%token_ids : tensor<1x4xi64>) outs(%init.199 : tensor<i1>) {
  ^bb0(%in.202: i64, %out.203: i1):
    %b.204 = arith.constant 0 : i64
    %b.205 = arith.cmpi sge, %in.202, %b.204 : i64
    %b.206 = arith.constant 8 : i64
    %b.207 = arith.cmpi slt, %in.202, %b.206 : i64
    %b.208 = arith.andi %b.205, %b.207 : i1
    %b.209 = arith.andi %out.203, %b.208 : i1
    linalg.yield %b.209 : i1
  } -> tensor<i1>
  %ok.210 = tensor.extract %inbounds.198[] : tensor<i1>
  cf.assert %ok.210, "scatter_add index out of bounds"
  %collapse.211 = tensor.collapse_shape %token_ids [[0, 1]] : tensor<1x4xi64> into tensor<4xi64>
  %collapse.212 = tensor.collapse_shape %g_x_2 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %c.214 = arith.constant 0.0 : f32
  %empty.215 = tensor.empty() : tensor<8x4xf32>
  %init.213 = linalg.fill ins(%c.214 : f32) outs(%empty.215 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %g_emb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"], kina.scatter} ins(%collapse.211, %collapse.212 : tensor<4xi64>, tensor<4x4xf32>) outs(%init.213 : tensor<8x4xf32>) {
  ^bb0(%in.216: i64, %in.217: f32, %out.218: f32):
    %b.219 = linalg.index 0 : index
    %b.220 = arith.index_cast %b.219 : index to i64
    %b.221 = arith.cmpi eq, %in.216, %b.220 : i64
    %b.222 = arith.constant 0.0 : f32
    %b.223 = arith.select %b.221, %in.217, %b.222 : f32
    %b.224 = arith.addf %out.218, %b.223 : f32
    linalg.yield %b.224 : f32
  } -> tensor<8x4xf32>
  return %logits, %g_emb, %g_mask, %g_scale, %g_wq, %g_wk, %g_wv, %g_wo, %g_lm_head : tensor<1x4x8xf32>, tensor<8x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>
}
func.func private @main(%in.token_ids: tensor<1x4xi64>, %in.emb: tensor<8x4xf32>, %in.mask: tensor<1x1x4x4xf32>, %in.scale: tensor<1x1x1x1xf32>, %in.wq: tensor<4x4xf32>, %in.wk: tensor<4x4xf32>, %in.wv: tensor<4x4xf32>, %in.wo: tensor<4x4xf32>, %in.lm_head: tensor<4x8xf32>, %in.lr: tensor<1x1xf32>, %dest.0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %call.0:9 = func.call @storylm0_fwd_grad(%in.token_ids, %in.emb, %in.mask, %in.scale, %in.wq, %in.wk, %in.wv, %in.wo, %in.lm_head) : (tensor<1x4xi64>, tensor<8x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>) -> (tensor<1x4x8xf32>, tensor<8x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>)
  %empty.2 = tensor.empty() : tensor<8x4xf32>
  %t.1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in.lr : tensor<1x1xf32>) outs(%empty.2 : tensor<8x4xf32>) {
  ^bb0(%in.3: f32, %out.4: f32):
    linalg.yield %in.3 : f32
  } -> tensor<8x4xf32>
  %empty.6 = tensor.empty() : tensor<8x4xf32>
  %t.5 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t.1, %call.0#1 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%empty.6 : tensor<8x4xf32>) {
  ^bb0(%in.7: f32, %in.8: f32, %out.9: f32):
    %b.10 = arith.mulf %in.7, %in.8 : f32
    linalg.yield %b.10 : f32
  } -> tensor<8x4xf32>
  %t.11 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in.emb, %t.5 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%dest.0 : tensor<8x4xf32>) {
  ^bb0(%in.12: f32, %in.13: f32, %out.14: f32):
    %b.15 = arith.subf %in.12, %in.13 : f32
    linalg.yield %b.15 : f32
  } -> tensor<8x4xf32>
  return %t.11 : tensor<8x4xf32>
}
func.func @kina_entry(%in.token_ids: tensor<1x4xi64> {bufferization.writable = false}, %in.emb: tensor<8x4xf32> {bufferization.writable = false}, %in.mask: tensor<1x1x4x4xf32> {bufferization.writable = false}, %in.scale: tensor<1x1x1x1xf32> {bufferization.writable = false}, %in.wq: tensor<4x4xf32> {bufferization.writable = false}, %in.wk: tensor<4x4xf32> {bufferization.writable = false}, %in.wv: tensor<4x4xf32> {bufferization.writable = false}, %in.wo: tensor<4x4xf32> {bufferization.writable = false}, %in.lm_head: tensor<4x8xf32> {bufferization.writable = false}, %in.lr: tensor<1x1xf32> {bufferization.writable = false}, %out.0: memref<8x4xf32>) attributes {llvm.emit_c_interface} {
  %dest.0 = bufferization.to_tensor %out.0 restrict writable : memref<8x4xf32>
  %r = func.call @main(%in.token_ids, %in.emb, %in.mask, %in.scale, %in.wq, %in.wk, %in.wv, %in.wo, %in.lm_head, %in.lr, %dest.0) : (tensor<1x4xi64>, tensor<8x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<1x1xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}
