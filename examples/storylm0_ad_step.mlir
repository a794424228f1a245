// kina examples/storylm0_ad_step.kina: host lowering to linalg on tensors (MLIR 19)
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
  %c.20 = arith.constant 0.0 : f32
  %empty.21 = tensor.empty() : tensor<1x4x4xf32>
  %init.19 = linalg.fill ins(%c.20 : f32) outs(%empty.21 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %q = func.call @storylm0_fwd.mm0(%x, %wq3, %init.19) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c.23 = arith.constant 0.0 : f32
  %empty.24 = tensor.empty() : tensor<1x4x4xf32>
  %init.22 = linalg.fill ins(%c.23 : f32) outs(%empty.24 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %k = func.call @storylm0_fwd.mm1(%x, %wk3, %init.22) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c.26 = arith.constant 0.0 : f32
  %empty.27 = tensor.empty() : tensor<1x4x4xf32>
  %init.25 = linalg.fill ins(%c.26 : f32) outs(%empty.27 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %v = func.call @storylm0_fwd.mm2(%x, %wv3, %init.25) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %q4 = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.28 = tensor.empty() : tensor<1x2x4x2xf32>
  %qh = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%empty.28 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %k4 = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.29 = tensor.empty() : tensor<1x2x4x2xf32>
  %kh = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%empty.29 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %empty.30 = tensor.empty() : tensor<1x2x2x4xf32>
  %kt = linalg.transpose ins(%kh : tensor<1x2x4x2xf32>) outs(%empty.30 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %v4 = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.31 = tensor.empty() : tensor<1x2x4x2xf32>
  %vh = linalg.transpose ins(%v4 : tensor<1x4x2x2xf32>) outs(%empty.31 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %collapse.32 = tensor.collapse_shape %qh [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %collapse.33 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %c.36 = arith.constant 0.0 : f32
  %empty.37 = tensor.empty() : tensor<2x4x4xf32>
  %init.35 = linalg.fill ins(%c.36 : f32) outs(%empty.37 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %bmm.34 = func.call @storylm0_fwd.mm3(%collapse.32, %collapse.33, %init.35) : (tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tensor.expand_shape %bmm.34 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %empty.38 = tensor.empty() : tensor<1x2x4x4xf32>
  %scale_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scale : tensor<1x1x1x1xf32>) outs(%empty.38 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.39: f32, %out.40: f32):
    linalg.yield %in.39 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.41 = tensor.empty() : tensor<1x2x4x4xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %scale_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.41 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.42: f32, %in.43: f32, %out.44: f32):
    %b.45 = arith.mulf %in.42, %in.43 : f32
    linalg.yield %b.45 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.46 = tensor.empty() : tensor<1x2x4x4xf32>
  %mask_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask : tensor<1x1x4x4xf32>) outs(%empty.46 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.47: f32, %out.48: f32):
    linalg.yield %in.47 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.49 = tensor.empty() : tensor<1x2x4x4xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ss, %mask_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.49 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.50: f32, %in.51: f32, %out.52: f32):
    %b.53 = arith.addf %in.50, %in.51 : f32
    linalg.yield %b.53 : f32
  } -> tensor<1x2x4x4xf32>
  %c.56 = arith.constant 0xFF800000 : f32
  %empty.57 = tensor.empty() : tensor<1x2x4xf32>
  %init.55 = linalg.fill ins(%c.56 : f32) outs(%empty.57 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %max.54 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm : tensor<1x2x4x4xf32>) outs(%init.55 : tensor<1x2x4xf32>) {
  ^bb0(%in.58: f32, %out.59: f32):
    %b.60 = arith.maximumf %in.58, %out.59 : f32
    linalg.yield %b.60 : f32
  } -> tensor<1x2x4xf32>
  %c.63 = arith.constant 0.0 : f32
  %empty.64 = tensor.empty() : tensor<1x2x4xf32>
  %init.62 = linalg.fill ins(%c.63 : f32) outs(%empty.64 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %expsum.61 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm, %max.54 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%init.62 : tensor<1x2x4xf32>) {
  ^bb0(%in.65: f32, %in.66: f32, %out.67: f32):
    %b.68 = arith.subf %in.65, %in.66 : f32
    %b.69 = math.exp %b.68 : f32
    %b.70 = arith.addf %out.67, %b.69 : f32
    linalg.yield %b.70 : f32
  } -> tensor<1x2x4xf32>
  %empty.71 = tensor.empty() : tensor<1x2x4x4xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sm, %max.54, %expsum.61 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) outs(%empty.71 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.72: f32, %in.73: f32, %in.74: f32, %out.75: f32):
    %b.76 = arith.subf %in.72, %in.73 : f32
    %b.77 = math.exp %b.76 : f32
    %b.78 = arith.divf %b.77, %in.74 : f32
    linalg.yield %b.78 : f32
  } -> tensor<1x2x4x4xf32>
  %collapse.79 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.80 = tensor.collapse_shape %vh [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %c.83 = arith.constant 0.0 : f32
  %empty.84 = tensor.empty() : tensor<2x4x2xf32>
  %init.82 = linalg.fill ins(%c.83 : f32) outs(%empty.84 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %bmm.81 = func.call @storylm0_fwd.mm4(%collapse.79, %collapse.80, %init.82) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %a = tensor.expand_shape %bmm.81 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.85 = tensor.empty() : tensor<1x4x2x2xf32>
  %at = linalg.transpose ins(%a : tensor<1x2x4x2xf32>) outs(%empty.85 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %m = tensor.collapse_shape %at [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %wo3 = tensor.expand_shape %wo [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %c.87 = arith.constant 0.0 : f32
  %empty.88 = tensor.empty() : tensor<1x4x4xf32>
  %init.86 = linalg.fill ins(%c.87 : f32) outs(%empty.88 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %o = func.call @storylm0_fwd.mm5(%m, %wo3, %init.86) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %lm3 = tensor.expand_shape %lm_head [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %c.90 = arith.constant 0.0 : f32
  %empty.91 = tensor.empty() : tensor<1x4x8xf32>
  %init.89 = linalg.fill ins(%c.90 : f32) outs(%empty.91 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %logits = func.call @storylm0_fwd.mm6(%o, %lm3, %init.89) : (tensor<1x4x4xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %logits : tensor<1x4x8xf32>
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
  %c.20 = arith.constant 0.0 : f32
  %empty.21 = tensor.empty() : tensor<1x4x4xf32>
  %init.19 = linalg.fill ins(%c.20 : f32) outs(%empty.21 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %q = func.call @storylm0_fwd_grad.mm7(%x, %wq3, %init.19) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c.23 = arith.constant 0.0 : f32
  %empty.24 = tensor.empty() : tensor<1x4x4xf32>
  %init.22 = linalg.fill ins(%c.23 : f32) outs(%empty.24 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %k = func.call @storylm0_fwd_grad.mm8(%x, %wk3, %init.22) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c.26 = arith.constant 0.0 : f32
  %empty.27 = tensor.empty() : tensor<1x4x4xf32>
  %init.25 = linalg.fill ins(%c.26 : f32) outs(%empty.27 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %v = func.call @storylm0_fwd_grad.mm9(%x, %wv3, %init.25) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %q4 = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.28 = tensor.empty() : tensor<1x2x4x2xf32>
  %qh = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%empty.28 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %k4 = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.29 = tensor.empty() : tensor<1x2x4x2xf32>
  %kh = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%empty.29 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %empty.30 = tensor.empty() : tensor<1x2x2x4xf32>
  %kt = linalg.transpose ins(%kh : tensor<1x2x4x2xf32>) outs(%empty.30 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %v4 = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.31 = tensor.empty() : tensor<1x2x4x2xf32>
  %vh = linalg.transpose ins(%v4 : tensor<1x4x2x2xf32>) outs(%empty.31 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %collapse.32 = tensor.collapse_shape %qh [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %collapse.33 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %c.36 = arith.constant 0.0 : f32
  %empty.37 = tensor.empty() : tensor<2x4x4xf32>
  %init.35 = linalg.fill ins(%c.36 : f32) outs(%empty.37 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %bmm.34 = func.call @storylm0_fwd_grad.mm10(%collapse.32, %collapse.33, %init.35) : (tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tensor.expand_shape %bmm.34 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %empty.38 = tensor.empty() : tensor<1x2x4x4xf32>
  %scale_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scale : tensor<1x1x1x1xf32>) outs(%empty.38 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.39: f32, %out.40: f32):
    linalg.yield %in.39 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.41 = tensor.empty() : tensor<1x2x4x4xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %scale_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.41 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.42: f32, %in.43: f32, %out.44: f32):
    %b.45 = arith.mulf %in.42, %in.43 : f32
    linalg.yield %b.45 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.46 = tensor.empty() : tensor<1x2x4x4xf32>
  %mask_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask : tensor<1x1x4x4xf32>) outs(%empty.46 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.47: f32, %out.48: f32):
    linalg.yield %in.47 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.49 = tensor.empty() : tensor<1x2x4x4xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ss, %mask_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.49 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.50: f32, %in.51: f32, %out.52: f32):
    %b.53 = arith.addf %in.50, %in.51 : f32
    linalg.yield %b.53 : f32
  } -> tensor<1x2x4x4xf32>
  %c.56 = arith.constant 0xFF800000 : f32
  %empty.57 = tensor.empty() : tensor<1x2x4xf32>
  %init.55 = linalg.fill ins(%c.56 : f32) outs(%empty.57 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %max.54 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm : tensor<1x2x4x4xf32>) outs(%init.55 : tensor<1x2x4xf32>) {
  ^bb0(%in.58: f32, %out.59: f32):
    %b.60 = arith.maximumf %in.58, %out.59 : f32
    linalg.yield %b.60 : f32
  } -> tensor<1x2x4xf32>
  %c.63 = arith.constant 0.0 : f32
  %empty.64 = tensor.empty() : tensor<1x2x4xf32>
  %init.62 = linalg.fill ins(%c.63 : f32) outs(%empty.64 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %expsum.61 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm, %max.54 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%init.62 : tensor<1x2x4xf32>) {
  ^bb0(%in.65: f32, %in.66: f32, %out.67: f32):
    %b.68 = arith.subf %in.65, %in.66 : f32
    %b.69 = math.exp %b.68 : f32
    %b.70 = arith.addf %out.67, %b.69 : f32
    linalg.yield %b.70 : f32
  } -> tensor<1x2x4xf32>
  %empty.71 = tensor.empty() : tensor<1x2x4x4xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sm, %max.54, %expsum.61 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) outs(%empty.71 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.72: f32, %in.73: f32, %in.74: f32, %out.75: f32):
    %b.76 = arith.subf %in.72, %in.73 : f32
    %b.77 = math.exp %b.76 : f32
    %b.78 = arith.divf %b.77, %in.74 : f32
    linalg.yield %b.78 : f32
  } -> tensor<1x2x4x4xf32>
  %collapse.79 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.80 = tensor.collapse_shape %vh [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %c.83 = arith.constant 0.0 : f32
  %empty.84 = tensor.empty() : tensor<2x4x2xf32>
  %init.82 = linalg.fill ins(%c.83 : f32) outs(%empty.84 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %bmm.81 = func.call @storylm0_fwd_grad.mm11(%collapse.79, %collapse.80, %init.82) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %a = tensor.expand_shape %bmm.81 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.85 = tensor.empty() : tensor<1x4x2x2xf32>
  %at = linalg.transpose ins(%a : tensor<1x2x4x2xf32>) outs(%empty.85 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %m = tensor.collapse_shape %at [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %wo3 = tensor.expand_shape %wo [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %c.87 = arith.constant 0.0 : f32
  %empty.88 = tensor.empty() : tensor<1x4x4xf32>
  %init.86 = linalg.fill ins(%c.87 : f32) outs(%empty.88 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %o = func.call @storylm0_fwd_grad.mm12(%m, %wo3, %init.86) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %lm3 = tensor.expand_shape %lm_head [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %c.90 = arith.constant 0.0 : f32
  %empty.91 = tensor.empty() : tensor<1x4x8xf32>
  %init.89 = linalg.fill ins(%c.90 : f32) outs(%empty.91 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %logits = func.call @storylm0_fwd_grad.mm13(%o, %lm3, %init.89) : (tensor<1x4x4xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %c.92 = arith.constant 1.0 : f32
  %empty.93 = tensor.empty() : tensor<1x4x8xf32>
  %g_logits = linalg.fill ins(%c.92 : f32) outs(%empty.93 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %empty.94 = tensor.empty() : tensor<1x8x4xf32>
  %t1 = linalg.transpose ins(%lm3 : tensor<1x4x8xf32>) outs(%empty.94 : tensor<1x8x4xf32>) permutation = [0, 2, 1]
  %c.96 = arith.constant 0.0 : f32
  %empty.97 = tensor.empty() : tensor<1x4x4xf32>
  %init.95 = linalg.fill ins(%c.96 : f32) outs(%empty.97 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_o = func.call @storylm0_fwd_grad.mm14(%g_logits, %t1, %init.95) : (tensor<1x4x8xf32>, tensor<1x8x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.98 = tensor.empty() : tensor<1x4x4xf32>
  %t3 = linalg.transpose ins(%o : tensor<1x4x4xf32>) outs(%empty.98 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.100 = arith.constant 0.0 : f32
  %empty.101 = tensor.empty() : tensor<1x4x8xf32>
  %init.99 = linalg.fill ins(%c.100 : f32) outs(%empty.101 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %g_lm3 = func.call @storylm0_fwd_grad.mm15(%t3, %g_logits, %init.99) : (tensor<1x4x4xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %g_lm_head = tensor.collapse_shape %g_lm3 [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  %empty.102 = tensor.empty() : tensor<1x4x4xf32>
  %t6 = linalg.transpose ins(%wo3 : tensor<1x4x4xf32>) outs(%empty.102 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.104 = arith.constant 0.0 : f32
  %empty.105 = tensor.empty() : tensor<1x4x4xf32>
  %init.103 = linalg.fill ins(%c.104 : f32) outs(%empty.105 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_m = func.call @storylm0_fwd_grad.mm16(%g_o, %t6, %init.103) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.106 = tensor.empty() : tensor<1x4x4xf32>
  %t8 = linalg.transpose ins(%m : tensor<1x4x4xf32>) outs(%empty.106 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.108 = arith.constant 0.0 : f32
  %empty.109 = tensor.empty() : tensor<1x4x4xf32>
  %init.107 = linalg.fill ins(%c.108 : f32) outs(%empty.109 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_wo3 = func.call @storylm0_fwd_grad.mm17(%t8, %g_o, %init.107) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_wo = tensor.collapse_shape %g_wo3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %g_at = tensor.expand_shape %g_m [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %empty.110 = tensor.empty() : tensor<1x2x4x2xf32>
  %g_a = linalg.transpose ins(%g_at : tensor<1x4x2x2xf32>) outs(%empty.110 : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %empty.111 = tensor.empty() : tensor<1x2x2x4xf32>
  %t13 = linalg.transpose ins(%vh : tensor<1x2x4x2xf32>) outs(%empty.111 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %collapse.112 = tensor.collapse_shape %g_a [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %collapse.113 = tensor.collapse_shape %t13 [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %c.116 = arith.constant 0.0 : f32
  %empty.117 = tensor.empty() : tensor<2x4x4xf32>
  %init.115 = linalg.fill ins(%c.116 : f32) outs(%empty.117 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %bmm.114 = func.call @storylm0_fwd_grad.mm18(%collapse.112, %collapse.113, %init.115) : (tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %g_p = tensor.expand_shape %bmm.114 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %empty.118 = tensor.empty() : tensor<1x2x4x4xf32>
  %t15 = linalg.transpose ins(%p : tensor<1x2x4x4xf32>) outs(%empty.118 : tensor<1x2x4x4xf32>) permutation = [0, 1, 3, 2]
  %collapse.119 = tensor.collapse_shape %t15 [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.120 = tensor.collapse_shape %g_a [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %c.123 = arith.constant 0.0 : f32
  %empty.124 = tensor.empty() : tensor<2x4x2xf32>
  %init.122 = linalg.fill ins(%c.123 : f32) outs(%empty.124 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %bmm.121 = func.call @storylm0_fwd_grad.mm19(%collapse.119, %collapse.120, %init.122) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %g_vh = tensor.expand_shape %bmm.121 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.125 = tensor.empty() : tensor<1x2x4x4xf32>
  %t17 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g_p, %p : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.125 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.126: f32, %in.127: f32, %out.128: f32):
    %b.129 = arith.mulf %in.126, %in.127 : f32
    linalg.yield %b.129 : f32
  } -> tensor<1x2x4x4xf32>
  %c.132 = arith.constant 0.0 : f32
  %empty.133 = tensor.empty() : tensor<1x2x4xf32>
  %init.131 = linalg.fill ins(%c.132 : f32) outs(%empty.133 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %sum.130 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t17 : tensor<1x2x4x4xf32>) outs(%init.131 : tensor<1x2x4xf32>) {
  ^bb0(%in.134: f32, %out.135: f32):
    %b.136 = arith.addf %in.134, %out.135 : f32
    linalg.yield %b.136 : f32
  } -> tensor<1x2x4xf32>
  %t18 = tensor.expand_shape %sum.130 [[0], [1], [2, 3]] output_shape [1, 2, 4, 1] : tensor<1x2x4xf32> into tensor<1x2x4x1xf32>
  %empty.137 = tensor.empty() : tensor<1x2x4x4xf32>
  %t19 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t18 : tensor<1x2x4x1xf32>) outs(%empty.137 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.138: f32, %out.139: f32):
    linalg.yield %in.138 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.140 = tensor.empty() : tensor<1x2x4x4xf32>
  %t20 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g_p, %t19 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.140 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.141: f32, %in.142: f32, %out.143: f32):
    %b.144 = arith.subf %in.141, %in.142 : f32
    linalg.yield %b.144 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.145 = tensor.empty() : tensor<1x2x4x4xf32>
  %g_sm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %t20 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.145 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.146: f32, %in.147: f32, %out.148: f32):
    %b.149 = arith.mulf %in.146, %in.147 : f32
    linalg.yield %b.149 : f32
  } -> tensor<1x2x4x4xf32>
  %c.152 = arith.constant 0.0 : f32
  %empty.153 = tensor.empty() : tensor<1x4x4xf32>
  %init.151 = linalg.fill ins(%c.152 : f32) outs(%empty.153 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %sum.150 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%g_sm : tensor<1x2x4x4xf32>) outs(%init.151 : tensor<1x4x4xf32>) {
  ^bb0(%in.154: f32, %out.155: f32):
    %b.156 = arith.addf %in.154, %out.155 : f32
    linalg.yield %b.156 : f32
  } -> tensor<1x4x4xf32>
  %g_mask = tensor.expand_shape %sum.150 [[0], [1, 2], [3]] output_shape [1, 1, 4, 4] : tensor<1x4x4xf32> into tensor<1x1x4x4xf32>
  %empty.157 = tensor.empty() : tensor<1x2x4x4xf32>
  %g_s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g_sm, %scale_b : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.157 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.158: f32, %in.159: f32, %out.160: f32):
    %b.161 = arith.mulf %in.158, %in.159 : f32
    linalg.yield %b.161 : f32
  } -> tensor<1x2x4x4xf32>
  %empty.162 = tensor.empty() : tensor<1x2x4x4xf32>
  %g_scale_b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g_sm, %s : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%empty.162 : tensor<1x2x4x4xf32>) {
  ^bb0(%in.163: f32, %in.164: f32, %out.165: f32):
    %b.166 = arith.mulf %in.163, %in.164 : f32
    linalg.yield %b.166 : f32
  } -> tensor<1x2x4x4xf32>
  %c.169 = arith.constant 0.0 : f32
  %empty.170 = tensor.empty() : tensor<1x4x4xf32>
  %init.168 = linalg.fill ins(%c.169 : f32) outs(%empty.170 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %sum.167 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%g_scale_b : tensor<1x2x4x4xf32>) outs(%init.168 : tensor<1x4x4xf32>) {
  ^bb0(%in.171: f32, %out.172: f32):
    %b.173 = arith.addf %in.171, %out.172 : f32
    linalg.yield %b.173 : f32
  } -> tensor<1x4x4xf32>
  %t25 = tensor.expand_shape %sum.167 [[0], [1, 2], [3]] output_shape [1, 1, 4, 4] : tensor<1x4x4xf32> into tensor<1x1x4x4xf32>
  %c.176 = arith.constant 0.0 : f32
  %empty.177 = tensor.empty() : tensor<1x1x4xf32>
  %init.175 = linalg.fill ins(%c.176 : f32) outs(%empty.177 : tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
  %sum.174 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%t25 : tensor<1x1x4x4xf32>) outs(%init.175 : tensor<1x1x4xf32>) {
  ^bb0(%in.178: f32, %out.179: f32):
    %b.180 = arith.addf %in.178, %out.179 : f32
    linalg.yield %b.180 : f32
  } -> tensor<1x1x4xf32>
  %t26 = tensor.expand_shape %sum.174 [[0], [1], [2, 3]] output_shape [1, 1, 1, 4] : tensor<1x1x4xf32> into tensor<1x1x1x4xf32>
  %c.183 = arith.constant 0.0 : f32
  %empty.184 = tensor.empty() : tensor<1x1x1xf32>
  %init.182 = linalg.fill ins(%c.183 : f32) outs(%empty.184 : tensor<1x1x1xf32>) -> tensor<1x1x1xf32>
  %sum.181 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t26 : tensor<1x1x1x4xf32>) outs(%init.182 : tensor<1x1x1xf32>) {
  ^bb0(%in.185: f32, %out.186: f32):
    %b.187 = arith.addf %in.185, %out.186 : f32
    linalg.yield %b.187 : f32
  } -> tensor<1x1x1xf32>
  %g_scale = tensor.expand_shape %sum.181 [[0], [1], [2, 3]] output_shape [1, 1, 1, 1] : tensor<1x1x1xf32> into tensor<1x1x1x1xf32>
  %empty.188 = tensor.empty() : tensor<1x2x4x2xf32>
  %t28 = linalg.transpose ins(%kt : tensor<1x2x2x4xf32>) outs(%empty.188 : tensor<1x2x4x2xf32>) permutation = [0, 1, 3, 2]
  %collapse.189 = tensor.collapse_shape %g_s [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %collapse.190 = tensor.collapse_shape %t28 [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
  %c.193 = arith.constant 0.0 : f32
  %empty.194 = tensor.empty() : tensor<2x4x2xf32>
  %init.192 = linalg.fill ins(%c.193 : f32) outs(%empty.194 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %bmm.191 = func.call @storylm0_fwd_grad.mm20(%collapse.189, %collapse.190, %init.192) : (tensor<2x4x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  %g_qh = tensor.expand_shape %bmm.191 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
  %empty.195 = tensor.empty() : tensor<1x2x2x4xf32>
  %t30 = linalg.transpose ins(%qh : tensor<1x2x4x2xf32>) outs(%empty.195 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
  %collapse.196 = tensor.collapse_shape %t30 [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
  %collapse.197 = tensor.collapse_shape %g_s [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %c.200 = arith.constant 0.0 : f32
  %empty.201 = tensor.empty() : tensor<2x2x4xf32>
  %init.199 = linalg.fill ins(%c.200 : f32) outs(%empty.201 : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %bmm.198 = func.call @storylm0_fwd_grad.mm21(%collapse.196, %collapse.197, %init.199) : (tensor<2x2x4xf32>, tensor<2x4x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %g_kt = tensor.expand_shape %bmm.198 [[0, 1], [2], [3]] output_shape [1, 2, 2, 4] : tensor<2x2x4xf32> into tensor<1x2x2x4xf32>
  %empty.202 = tensor.empty() : tensor<1x4x2x2xf32>
  %g_v4 = linalg.transpose ins(%g_vh : tensor<1x2x4x2xf32>) outs(%empty.202 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %g_v = tensor.collapse_shape %g_v4 [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %empty.203 = tensor.empty() : tensor<1x2x4x2xf32>
  %g_kh = linalg.transpose ins(%g_kt : tensor<1x2x2x4xf32>) outs(%empty.203 : tensor<1x2x4x2xf32>) permutation = [0, 1, 3, 2]
  %empty.204 = tensor.empty() : tensor<1x4x2x2xf32>
  %g_k4 = linalg.transpose ins(%g_kh : tensor<1x2x4x2xf32>) outs(%empty.204 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %g_k = tensor.collapse_shape %g_k4 [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %empty.205 = tensor.empty() : tensor<1x4x2x2xf32>
  %g_q4 = linalg.transpose ins(%g_qh : tensor<1x2x4x2xf32>) outs(%empty.205 : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
  %g_q = tensor.collapse_shape %g_q4 [[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  %empty.206 = tensor.empty() : tensor<1x4x4xf32>
  %t39 = linalg.transpose ins(%wv3 : tensor<1x4x4xf32>) outs(%empty.206 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.208 = arith.constant 0.0 : f32
  %empty.209 = tensor.empty() : tensor<1x4x4xf32>
  %init.207 = linalg.fill ins(%c.208 : f32) outs(%empty.209 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_x = func.call @storylm0_fwd_grad.mm22(%g_v, %t39, %init.207) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.210 = tensor.empty() : tensor<1x4x4xf32>
  %t41 = linalg.transpose ins(%x : tensor<1x4x4xf32>) outs(%empty.210 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.212 = arith.constant 0.0 : f32
  %empty.213 = tensor.empty() : tensor<1x4x4xf32>
  %init.211 = linalg.fill ins(%c.212 : f32) outs(%empty.213 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_wv3 = func.call @storylm0_fwd_grad.mm23(%t41, %g_v, %init.211) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.214 = tensor.empty() : tensor<1x4x4xf32>
  %t43 = linalg.transpose ins(%wk3 : tensor<1x4x4xf32>) outs(%empty.214 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.216 = arith.constant 0.0 : f32
  %empty.217 = tensor.empty() : tensor<1x4x4xf32>
  %init.215 = linalg.fill ins(%c.216 : f32) outs(%empty.217 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %t44 = func.call @storylm0_fwd_grad.mm24(%g_k, %t43, %init.215) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.218 = tensor.empty() : tensor<1x4x4xf32>
  %t45 = linalg.transpose ins(%x : tensor<1x4x4xf32>) outs(%empty.218 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.220 = arith.constant 0.0 : f32
  %empty.221 = tensor.empty() : tensor<1x4x4xf32>
  %init.219 = linalg.fill ins(%c.220 : f32) outs(%empty.221 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_wk3 = func.call @storylm0_fwd_grad.mm25(%t45, %g_k, %init.219) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.222 = tensor.empty() : tensor<1x4x4xf32>
  %g_x_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g_x, %t44 : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%empty.222 : tensor<1x4x4xf32>) {
  ^bb0(%in.223: f32, %in.224: f32, %out.225: f32):
    %b.226 = arith.addf %in.223, %in.224 : f32
    linalg.yield %b.226 : f32
  } -> tensor<1x4x4xf32>
  %empty.227 = tensor.empty() : tensor<1x4x4xf32>
  %t48 = linalg.transpose ins(%wq3 : tensor<1x4x4xf32>) outs(%empty.227 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.229 = arith.constant 0.0 : f32
  %empty.230 = tensor.empty() : tensor<1x4x4xf32>
  %init.228 = linalg.fill ins(%c.229 : f32) outs(%empty.230 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %t49 = func.call @storylm0_fwd_grad.mm26(%g_q, %t48, %init.228) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.231 = tensor.empty() : tensor<1x4x4xf32>
  %t50 = linalg.transpose ins(%x : tensor<1x4x4xf32>) outs(%empty.231 : tensor<1x4x4xf32>) permutation = [0, 2, 1]
  %c.233 = arith.constant 0.0 : f32
  %empty.234 = tensor.empty() : tensor<1x4x4xf32>
  %init.232 = linalg.fill ins(%c.233 : f32) outs(%empty.234 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %g_wq3 = func.call @storylm0_fwd_grad.mm27(%t50, %g_q, %init.232) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %empty.235 = tensor.empty() : tensor<1x4x4xf32>
  %g_x_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g_x_1, %t49 : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%empty.235 : tensor<1x4x4xf32>) {
  ^bb0(%in.236: f32, %in.237: f32, %out.238: f32):
    %b.239 = arith.addf %in.236, %in.237 : f32
    linalg.yield %b.239 : f32
  } -> tensor<1x4x4xf32>
  %g_wv = tensor.collapse_shape %g_wv3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %g_wk = tensor.collapse_shape %g_wk3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %g_wq = tensor.collapse_shape %g_wq3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %c.242 = arith.constant true
  %empty.243 = tensor.empty() : tensor<i1>
  %init.241 = linalg.fill ins(%c.242 : i1) outs(%empty.243 : tensor<i1>) -> tensor<i1>
  %inbounds.240 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%token_ids : tensor<1x4xi64>) outs(%init.241 : tensor<i1>) {
  ^bb0(%in.244: i64, %out.245: i1):
    %b.246 = arith.constant 0 : i64
    %b.247 = arith.cmpi sge, %in.244, %b.246 : i64
    %b.248 = arith.constant 8 : i64
    %b.249 = arith.cmpi slt, %in.244, %b.248 : i64
    %b.250 = arith.andi %b.247, %b.249 : i1
    %b.251 = arith.andi %out.245, %b.250 : i1
    linalg.yield %b.251 : i1
  } -> tensor<i1>
  %ok.252 = tensor.extract %inbounds.240[] : tensor<i1>
  cf.assert %ok.252, "scatter_add index out of bounds"
  %collapse.253 = tensor.collapse_shape %token_ids [[0, 1]] : tensor<1x4xi64> into tensor<4xi64>
  %collapse.254 = tensor.collapse_shape %g_x_2 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %c.256 = arith.constant 0.0 : f32
  %empty.257 = tensor.empty() : tensor<8x4xf32>
  %init.255 = linalg.fill ins(%c.256 : f32) outs(%empty.257 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %g_emb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"], kina.scatter} ins(%collapse.253, %collapse.254 : tensor<4xi64>, tensor<4x4xf32>) outs(%init.255 : tensor<8x4xf32>) {
  ^bb0(%in.258: i64, %in.259: f32, %out.260: f32):
    %b.261 = linalg.index 0 : index
    %b.262 = arith.index_cast %b.261 : index to i64
    %b.263 = arith.cmpi eq, %in.258, %b.262 : i64
    %b.264 = arith.constant 0.0 : f32
    %b.265 = arith.select %b.263, %in.259, %b.264 : f32
    %b.266 = arith.addf %out.260, %b.265 : f32
    linalg.yield %b.266 : f32
  } -> tensor<8x4xf32>
  return %logits, %g_emb, %g_mask, %g_scale, %g_wq, %g_wk, %g_wv, %g_wo, %g_lm_head : tensor<1x4x8xf32>, tensor<8x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>
}
func.func private @main(%in.token_ids: tensor<1x4xi64>, %in.emb: tensor<8x4xf32>, %in.mask: tensor<1x1x4x4xf32>, %in.scale: tensor<1x1x1x1xf32>, %in.wq: tensor<4x4xf32>, %in.wk: tensor<4x4xf32>, %in.wv: tensor<4x4xf32>, %in.wo: tensor<4x4xf32>, %in.lm_head: tensor<4x8xf32>, %in.lr: tensor<1x1xf32>) -> tensor<8x4xf32> {
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
  %empty.12 = tensor.empty() : tensor<8x4xf32>
  %t.11 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in.emb, %t.5 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%empty.12 : tensor<8x4xf32>) {
  ^bb0(%in.13: f32, %in.14: f32, %out.15: f32):
    %b.16 = arith.subf %in.13, %in.14 : f32
    linalg.yield %b.16 : f32
  } -> tensor<8x4xf32>
  return %t.11 : tensor<8x4xf32>
}
func.func private @storylm0_fwd.mm0(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd.mm1(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd.mm2(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd.mm3(%a: tensor<2x4x2xf32>, %b: tensor<2x2x4xf32>, %init: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x2"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%init : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}
func.func private @storylm0_fwd.mm4(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %init: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.tiles = "1x4x2x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%init : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @storylm0_fwd.mm5(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd.mm6(%a: tensor<1x4x4xf32>, %b: tensor<1x4x8xf32>, %init: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {kina.contraction, kina.tiles = "1x4x8x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x8xf32>) outs(%init : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %c : tensor<1x4x8xf32>
}
func.func private @storylm0_fwd_grad.mm7(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm8(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm9(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm10(%a: tensor<2x4x2xf32>, %b: tensor<2x2x4xf32>, %init: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x2"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%init : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm11(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %init: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.tiles = "1x4x2x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%init : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @storylm0_fwd_grad.mm12(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm13(%a: tensor<1x4x4xf32>, %b: tensor<1x4x8xf32>, %init: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {kina.contraction, kina.tiles = "1x4x8x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x8xf32>) outs(%init : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %c : tensor<1x4x8xf32>
}
func.func private @storylm0_fwd_grad.mm14(%a: tensor<1x4x8xf32>, %b: tensor<1x8x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x8"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x8x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm15(%a: tensor<1x4x4xf32>, %b: tensor<1x4x8xf32>, %init: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {kina.contraction, kina.tiles = "1x4x8x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x8xf32>) outs(%init : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %c : tensor<1x4x8xf32>
}
func.func private @storylm0_fwd_grad.mm16(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm17(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm18(%a: tensor<2x4x2xf32>, %b: tensor<2x2x4xf32>, %init: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x2"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%init : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm19(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %init: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.tiles = "1x4x2x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%init : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @storylm0_fwd_grad.mm20(%a: tensor<2x4x4xf32>, %b: tensor<2x4x2xf32>, %init: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> attributes {kina.contraction, kina.tiles = "1x4x2x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%init : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %c : tensor<2x4x2xf32>
}
func.func private @storylm0_fwd_grad.mm21(%a: tensor<2x2x4xf32>, %b: tensor<2x4x4xf32>, %init: tensor<2x2x4xf32>) -> tensor<2x2x4xf32> attributes {kina.contraction, kina.tiles = "1x2x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x2x4xf32>, tensor<2x4x4xf32>) outs(%init : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %c : tensor<2x2x4xf32>
}
func.func private @storylm0_fwd_grad.mm22(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm23(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm24(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm25(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm26(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func private @storylm0_fwd_grad.mm27(%a: tensor<1x4x4xf32>, %b: tensor<1x4x4xf32>, %init: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {kina.contraction, kina.tiles = "1x4x4x4"} {
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%init : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %c : tensor<1x4x4xf32>
}
func.func @kina_entry(%in.token_ids: tensor<1x4xi64> {bufferization.writable = false}, %in.emb: tensor<8x4xf32> {bufferization.writable = false}, %in.mask: tensor<1x1x4x4xf32> {bufferization.writable = false}, %in.scale: tensor<1x1x1x1xf32> {bufferization.writable = false}, %in.wq: tensor<4x4xf32> {bufferization.writable = false}, %in.wk: tensor<4x4xf32> {bufferization.writable = false}, %in.wv: tensor<4x4xf32> {bufferization.writable = false}, %in.wo: tensor<4x4xf32> {bufferization.writable = false}, %in.lm_head: tensor<4x8xf32> {bufferization.writable = false}, %in.lr: tensor<1x1xf32> {bufferization.writable = false}, %out.0: memref<8x4xf32>) attributes {llvm.emit_c_interface} {
  %r = func.call @main(%in.token_ids, %in.emb, %in.mask, %in.scale, %in.wq, %in.wk, %in.wv, %in.wo, %in.lm_head, %in.lr) : (tensor<1x4xi64>, tensor<8x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<1x1xf32>) -> tensor<8x4xf32>
  bufferization.materialize_in_destination %r in restrict writable %out.0 : (tensor<8x4xf32>, memref<8x4xf32>) -> ()
  return
}
