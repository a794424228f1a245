// kina examples/nll_ad.kina: host lowering to linalg on tensors (MLIR 19)
func.func private @nll(%logits: tensor<1x4x8xf32>, %in.targets: tensor<1x4xi64>) -> tensor<1x4xf32> {
  %c.2 = arith.constant 0xFF800000 : f32
  %empty.3 = tensor.empty() : tensor<1x4xf32>
  %init.1 = linalg.fill ins(%c.2 : f32) outs(%empty.3 : tensor<1x4xf32>) -> tensor<1x4xf32>
  %max.0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%logits : tensor<1x4x8xf32>) outs(%init.1 : tensor<1x4xf32>) {
  ^bb0(%in.4: f32, %out.5: f32):
    %b.6 = arith.maximumf %in.4, %out.5 : f32
    linalg.yield %b.6 : f32
  } -> tensor<1x4xf32>
  %c.9 = arith.constant 0.0 : f32
  %empty.10 = tensor.empty() : tensor<1x4xf32>
  %init.8 = linalg.fill ins(%c.9 : f32) outs(%empty.10 : tensor<1x4xf32>) -> tensor<1x4xf32>
  %expsum.7 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%logits, %max.0 : tensor<1x4x8xf32>, tensor<1x4xf32>) outs(%init.8 : tensor<1x4xf32>) {
  ^bb0(%in.11: f32, %in.12: f32, %out.13: f32):
    %b.14 = arith.subf %in.11, %in.12 : f32
    %b.15 = math.exp %b.14 : f32
    %b.16 = arith.addf %out.13, %b.15 fastmath<reassoc> : f32
    linalg.yield %b.16 : f32
  } -> tensor<1x4xf32>
  %empty.18 = tensor.empty() : tensor<1x4xf32>
  %logsum.17 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%expsum.7 : tensor<1x4xf32>) outs(%empty.18 : tensor<1x4xf32>) {
  ^bb0(%in.19: f32, %out.20: f32):
    %b.21 = math.log %in.19 : f32
    linalg.yield %b.21 : f32
  } -> tensor<1x4xf32>
  %empty.22 = tensor.empty() : tensor<1x4x8xf32>
  %log_probs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%logits, %max.0, %logsum.17 : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) outs(%empty.22 : tensor<1x4x8xf32>) {
  ^bb0(%in.23: f32, %in.24: f32, %in.25: f32, %out.26: f32):
    %b.27 = arith.subf %in.23, %in.24 : f32
    %b.28 = arith.subf %b.27, %in.25 : f32
    linalg.yield %b.28 : f32
  } -> tensor<1x4x8xf32>
  %c.31 = arith.constant true
  %empty.32 = tensor.empty() : tensor<i1>
  %init.30 = linalg.fill ins(%c.31 : i1) outs(%empty.32 : tensor<i1>) -> tensor<i1>
  %inbounds.29 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%in.targets : tensor<1x4xi64>) outs(%init.30 : tensor<i1>) {
  ^bb0(%in.33: i64, %out.34: i1):
    %b.35 = arith.constant 0 : i64
    %b.36 = arith.cmpi sge, %in.33, %b.35 : i64
    %b.37 = arith.constant 8 : i64
    %b.38 = arith.cmpi slt, %in.33, %b.37 : i64
    %b.39 = arith.andi %b.36, %b.38 : i1
    %b.40 = arith.andi %out.34, %b.39 : i1
    linalg.yield %b.40 : i1
  } -> tensor<i1>
  %ok.41 = tensor.extract %inbounds.29[] : tensor<i1>
  cf.assert %ok.41, "take_along_axis index out of bounds"
  %empty.42 = tensor.empty() : tensor<1x4xf32>
  %picked = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in.targets : tensor<1x4xi64>) outs(%empty.42 : tensor<1x4xf32>) {
  ^bb0(%in.43: i64, %out.44: f32):
    %b.45 = linalg.index 0 : index
    %b.46 = linalg.index 1 : index
    %b.47 = arith.index_cast %in.43 : i64 to index
    %b.48 = tensor.extract %log_probs[%b.45, %b.46, %b.47] : tensor<1x4x8xf32>
    linalg.yield %b.48 : f32
  } -> tensor<1x4xf32>
  %empty.49 = tensor.empty() : tensor<1x4xf32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%picked : tensor<1x4xf32>) outs(%empty.49 : tensor<1x4xf32>) {
  ^bb0(%in.50: f32, %out.51: f32):
    %b.52 = arith.negf %in.50 : f32
    linalg.yield %b.52 : f32
  } -> tensor<1x4xf32>
  return %loss : tensor<1x4xf32>
}
func.func private @nll_grad(%logits: tensor<1x4x8xf32>, %in.targets: tensor<1x4xi64>) -> (tensor<1x4xf32>, tensor<1x4x8xf32>) {
  %c.2 = arith.constant 0xFF800000 : f32
  %empty.3 = tensor.empty() : tensor<1x4xf32>
  %init.1 = linalg.fill ins(%c.2 : f32) outs(%empty.3 : tensor<1x4xf32>) -> tensor<1x4xf32>
  %max.0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%logits : tensor<1x4x8xf32>) outs(%init.1 : tensor<1x4xf32>) {
  ^bb0(%in.4: f32, %out.5: f32):
    %b.6 = arith.maximumf %in.4, %out.5 : f32
    linalg.yield %b.6 : f32
  } -> tensor<1x4xf32>
  %c.9 = arith.constant 0.0 : f32
  %empty.10 = tensor.empty() : tensor<1x4xf32>
  %init.8 = linalg.fill ins(%c.9 : f32) outs(%empty.10 : tensor<1x4xf32>) -> tensor<1x4xf32>
  %expsum.7 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%logits, %max.0 : tensor<1x4x8xf32>, tensor<1x4xf32>) outs(%init.8 : tensor<1x4xf32>) {
  ^bb0(%in.11: f32, %in.12: f32, %out.13: f32):
    %b.14 = arith.subf %in.11, %in.12 : f32
    %b.15 = math.exp %b.14 : f32
    %b.16 = arith.addf %out.13, %b.15 fastmath<reassoc> : f32
    linalg.yield %b.16 : f32
  } -> tensor<1x4xf32>
  %empty.18 = tensor.empty() : tensor<1x4xf32>
  %logsum.17 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%expsum.7 : tensor<1x4xf32>) outs(%empty.18 : tensor<1x4xf32>) {
  ^bb0(%in.19: f32, %out.20: f32):
    %b.21 = math.log %in.19 : f32
    linalg.yield %b.21 : f32
  } -> tensor<1x4xf32>
  %empty.22 = tensor.empty() : tensor<1x4x8xf32>
  %log_probs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%logits, %max.0, %logsum.17 : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) outs(%empty.22 : tensor<1x4x8xf32>) {
  ^bb0(%in.23: f32, %in.24: f32, %in.25: f32, %out.26: f32):
    %b.27 = arith.subf %in.23, %in.24 : f32
    %b.28 = arith.subf %b.27, %in.25 : f32
    linalg.yield %b.28 : f32
  } -> tensor<1x4x8xf32>
  %c.31 = arith.constant true
  %empty.32 = tensor.empty() : tensor<i1>
  %init.30 = linalg.fill ins(%c.31 : i1) outs(%empty.32 : tensor<i1>) -> tensor<i1>
  %inbounds.29 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%in.targets : tensor<1x4xi64>) outs(%init.30 : tensor<i1>) {
  ^bb0(%in.33: i64, %out.34: i1):
    %b.35 = arith.constant 0 : i64
    %b.36 = arith.cmpi sge, %in.33, %b.35 : i64
    %b.37 = arith.constant 8 : i64
    %b.38 = arith.cmpi slt, %in.33, %b.37 : i64
    %b.39 = arith.andi %b.36, %b.38 : i1
    %b.40 = arith.andi %out.34, %b.39 : i1
    linalg.yield %b.40 : i1
  } -> tensor<i1>
  %ok.41 = tensor.extract %inbounds.29[] : tensor<i1>
  cf.assert %ok.41, "take_along_axis index out of bounds"
  %empty.42 = tensor.empty() : tensor<1x4xf32>
  %picked = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in.targets : tensor<1x4xi64>) outs(%empty.42 : tensor<1x4xf32>) {
  ^bb0(%in.43: i64, %out.44: f32):
    %b.45 = linalg.index 0 : index
    %b.46 = linalg.index 1 : index
    %b.47 = arith.index_cast %in.43 : i64 to index
    %b.48 = tensor.extract %log_probs[%b.45, %b.46, %b.47] : tensor<1x4x8xf32>
    linalg.yield %b.48 : f32
  } -> tensor<1x4xf32>
  %empty.49 = tensor.empty() : tensor<1x4xf32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%picked : tensor<1x4xf32>) outs(%empty.49 : tensor<1x4xf32>) {
  ^bb0(%in.50: f32, %out.51: f32):
    %b.52 = arith.negf %in.50 : f32
    linalg.yield %b.52 : f32
  } -> tensor<1x4xf32>
  %c.53 = arith.constant 1.0 : f32
  %empty.54 = tensor.empty() : tensor<1x4xf32>
  %g_loss = linalg.fill ins(%c.53 : f32) outs(%empty.54 : tensor<1x4xf32>) -> tensor<1x4xf32>
  %empty.55 = tensor.empty() : tensor<1x4xf32>
  %g_picked = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g_loss : tensor<1x4xf32>) outs(%empty.55 : tensor<1x4xf32>) {
  ^bb0(%in.56: f32, %out.57: f32):
    %b.58 = arith.negf %in.56 : f32
    linalg.yield %b.58 : f32
  } -> tensor<1x4xf32>
  %c.61 = arith.constant true
  %empty.62 = tensor.empty() : tensor<i1>
  %init.60 = linalg.fill ins(%c.61 : i1) outs(%empty.62 : tensor<i1>) -> tensor<i1>
  %inbounds.59 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%in.targets : tensor<1x4xi64>) outs(%init.60 : tensor<i1>) {
  ^bb0(%in.63: i64, %out.64: i1):
    %b.65 = arith.constant 0 : i64
    %b.66 = arith.cmpi sge, %in.63, %b.65 : i64
    %b.67 = arith.constant 8 : i64
    %b.68 = arith.cmpi slt, %in.63, %b.67 : i64
    %b.69 = arith.andi %b.66, %b.68 : i1
    %b.70 = arith.andi %out.64, %b.69 : i1
    linalg.yield %b.70 : i1
  } -> tensor<i1>
  %ok.71 = tensor.extract %inbounds.59[] : tensor<i1>
  cf.assert %ok.71, "scatter_along_axis index out of bounds"
  %empty.72 = tensor.empty() : tensor<1x4x8xf32>
  %g_log_probs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g_picked, %in.targets : tensor<1x4xf32>, tensor<1x4xi64>) outs(%empty.72 : tensor<1x4x8xf32>) {
  ^bb0(%in.73: f32, %in.74: i64, %out.75: f32):
    %b.76 = linalg.index 2 : index
    %b.77 = arith.index_cast %b.76 : index to i64
    %b.78 = arith.cmpi eq, %in.74, %b.77 : i64
    %b.79 = arith.constant 0.0 : f32
    %b.80 = arith.select %b.78, %in.73, %b.79 : f32
    linalg.yield %b.80 : f32
  } -> tensor<1x4x8xf32>
  %empty.81 = tensor.empty() : tensor<1x4x8xf32>
  %t3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%log_probs : tensor<1x4x8xf32>) outs(%empty.81 : tensor<1x4x8xf32>) {
  ^bb0(%in.82: f32, %out.83: f32):
    %b.84 = math.exp %in.82 : f32
    linalg.yield %b.84 : f32
  } -> tensor<1x4x8xf32>
  %c.87 = arith.constant 0.0 : f32
  %empty.88 = tensor.empty() : tensor<1x4xf32>
  %init.86 = linalg.fill ins(%c.87 : f32) outs(%empty.88 : tensor<1x4xf32>) -> tensor<1x4xf32>
  %sum.85 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g_log_probs : tensor<1x4x8xf32>) outs(%init.86 : tensor<1x4xf32>) {
  ^bb0(%in.89: f32, %out.90: f32):
    %b.91 = arith.addf %out.90, %in.89 fastmath<reassoc> : f32
    linalg.yield %b.91 : f32
  } -> tensor<1x4xf32>
  %t4 = tensor.expand_shape %sum.85 [[0], [1, 2]] output_shape [1, 4, 1] : tensor<1x4xf32> into tensor<1x4x1xf32>
  %empty.92 = tensor.empty() : tensor<1x4x8xf32>
  %t5 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t4 : tensor<1x4x1xf32>) outs(%empty.92 : tensor<1x4x8xf32>) {
  ^bb0(%in.93: f32, %out.94: f32):
    linalg.yield %in.93 : f32
  } -> tensor<1x4x8xf32>
  %empty.95 = tensor.empty() : tensor<1x4x8xf32>
  %t6 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t5, %t3 : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%empty.95 : tensor<1x4x8xf32>) {
  ^bb0(%in.96: f32, %in.97: f32, %out.98: f32):
    %b.99 = arith.mulf %in.96, %in.97 : f32
    linalg.yield %b.99 : f32
  } -> tensor<1x4x8xf32>
  %empty.100 = tensor.empty() : tensor<1x4x8xf32>
  %t7 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g_log_probs, %t6 : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%empty.100 : tensor<1x4x8xf32>) {
  ^bb0(%in.101: f32, %in.102: f32, %out.103: f32):
    %b.104 = arith.subf %in.101, %in.102 : f32
    linalg.yield %b.104 : f32
  } -> tensor<1x4x8xf32>
  %c.107 = arith.constant 0.0 : f32
  %empty.108 = tensor.empty() : tensor<1x4xf32>
  %init.106 = linalg.fill ins(%c.107 : f32) outs(%empty.108 : tensor<1x4xf32>) -> tensor<1x4xf32>
  %sum.105 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%t3 : tensor<1x4x8xf32>) outs(%init.106 : tensor<1x4xf32>) {
  ^bb0(%in.109: f32, %out.110: f32):
    %b.111 = arith.addf %out.110, %in.109 fastmath<reassoc> : f32
    linalg.yield %b.111 : f32
  } -> tensor<1x4xf32>
  %t8 = tensor.expand_shape %sum.105 [[0], [1, 2]] output_shape [1, 4, 1] : tensor<1x4xf32> into tensor<1x4x1xf32>
  %c.112 = arith.constant 0.0 : f32
  %empty.113 = tensor.empty() : tensor<1x4x1xf32>
  %t9 = linalg.fill ins(%c.112 : f32) outs(%empty.113 : tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %empty.114 = tensor.empty() : tensor<1x4x1xi1>
  %t10 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t8, %t9 : tensor<1x4x1xf32>, tensor<1x4x1xf32>) outs(%empty.114 : tensor<1x4x1xi1>) {
  ^bb0(%in.115: f32, %in.116: f32, %out.117: i1):
    %b.118 = arith.cmpf ogt, %in.115, %in.116 : f32
    linalg.yield %b.118 : i1
  } -> tensor<1x4x1xi1>
  %c.119 = arith.constant 1.0 : f32
  %empty.120 = tensor.empty() : tensor<1x4x1xf32>
  %t11 = linalg.fill ins(%c.119 : f32) outs(%empty.120 : tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %c.121 = arith.constant 0.0 : f32
  %empty.122 = tensor.empty() : tensor<1x4x1xf32>
  %t12 = linalg.fill ins(%c.121 : f32) outs(%empty.122 : tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %empty.123 = tensor.empty() : tensor<1x4x1xf32>
  %t13 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t10, %t11, %t12 : tensor<1x4x1xi1>, tensor<1x4x1xf32>, tensor<1x4x1xf32>) outs(%empty.123 : tensor<1x4x1xf32>) {
  ^bb0(%in.124: i1, %in.125: f32, %in.126: f32, %out.127: f32):
    %b.128 = arith.select %in.124, %in.125, %in.126 : f32
    linalg.yield %b.128 : f32
  } -> tensor<1x4x1xf32>
  %empty.129 = tensor.empty() : tensor<1x4x8xf32>
  %t14 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t13 : tensor<1x4x1xf32>) outs(%empty.129 : tensor<1x4x8xf32>) {
  ^bb0(%in.130: f32, %out.131: f32):
    linalg.yield %in.130 : f32
  } -> tensor<1x4x8xf32>
  %empty.132 = tensor.empty() : tensor<1x4x8xf32>
  %g_logits = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t7, %t14 : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%empty.132 : tensor<1x4x8xf32>) {
  ^bb0(%in.133: f32, %in.134: f32, %out.135: f32):
    %b.136 = arith.mulf %in.133, %in.134 : f32
    linalg.yield %b.136 : f32
  } -> tensor<1x4x8xf32>
  return %loss, %g_logits : tensor<1x4xf32>, tensor<1x4x8xf32>
}
func.func private @main(%in.logits: tensor<1x4x8xf32>, %in.targets: tensor<1x4xi64>, %dest.0: tensor<1x4xf32>, %dest.1: tensor<1x4x8xf32>) -> (tensor<1x4xf32>, tensor<1x4x8xf32>) {
  %call.0:2 = func.call @nll_grad(%in.logits, %in.targets) : (tensor<1x4x8xf32>, tensor<1x4xi64>) -> (tensor<1x4xf32>, tensor<1x4x8xf32>)
  return %call.0#0, %call.0#1 : tensor<1x4xf32>, tensor<1x4x8xf32>
}
func.func @kina_entry(%in.logits: tensor<1x4x8xf32> {bufferization.writable = false}, %in.targets: tensor<1x4xi64> {bufferization.writable = false}, %out.0: memref<1x4xf32>, %out.1: memref<1x4x8xf32>) attributes {llvm.emit_c_interface} {
  %dest.0 = tensor.empty() : tensor<1x4xf32>
  %dest.1 = tensor.empty() : tensor<1x4x8xf32>
  %r:2 = func.call @main(%in.logits, %in.targets, %dest.0, %dest.1) : (tensor<1x4x8xf32>, tensor<1x4xi64>, tensor<1x4xf32>, tensor<1x4x8xf32>) -> (tensor<1x4xf32>, tensor<1x4x8xf32>)
  bufferization.materialize_in_destination %r#0 in restrict writable %out.0 : (tensor<1x4xf32>, memref<1x4xf32>) -> ()
  bufferization.materialize_in_destination %r#1 in restrict writable %out.1 : (tensor<1x4x8xf32>, memref<1x4x8xf32>) -> ()
  return
}
