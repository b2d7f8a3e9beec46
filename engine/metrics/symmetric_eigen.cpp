#include "engine/metrics/symmetric_eigen.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/core/errors.h"

namespace kvs {

std::vector<double> symmetric_eigen(const std::vector<double>& matrix, int64_t n, std::vector<double>* vectors) {
  if (n < 0 || matrix.size() != static_cast<size_t>(n * n))
    throw InvalidArgumentError("symmetric eigenvalues: " + std::to_string(matrix.size()) + " values for a " +
                               std::to_string(n) + " x " + std::to_string(n) + " matrix");
  const size_t m = static_cast<size_t>(n);
  // Work on the symmetric matrix built from the upper triangle.
  std::vector<double> a(m * m);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = i; j < m; ++j) {
      const double v = matrix[i * m + j];
      if (!std::isfinite(v))
        throw InvalidArgumentError("symmetric eigenvalues: the matrix has a value that is not finite");
      a[i * m + j] = a[j * m + i] = v;
    }
  std::vector<double> v;
  if (vectors) {
    v.assign(m * m, 0.0);
    for (size_t i = 0; i < m; ++i) v[i * m + i] = 1.0;
  }
  auto off_diagonal = [&] {
    double s = 0;
    for (size_t i = 0; i < m; ++i)
      for (size_t j = i + 1; j < m; ++j) s += a[i * m + j] * a[i * m + j];
    return s;
  };
  double scale = 0;
  for (double x : a) scale += x * x;
  // Cyclic sweeps over every (p, q) above the diagonal; each rotation zeroes
  // a[p][q]. Convergence is quadratic: a handful of sweeps reach round-off.
  for (int sweep = 0; sweep < 100; ++sweep) {
    const double off = off_diagonal();
    if (off == 0.0 || off <= scale * 1e-34) break;
    for (size_t p = 0; p < m; ++p) {
      for (size_t q = p + 1; q < m; ++q) {
        const double apq = a[p * m + q];
        if (apq == 0.0) continue;
        const double app = a[p * m + p], aqq = a[q * m + q];
        // After a few sweeps an element below both diagonals' last bit is
        // round-off: drop it rather than rotate by it.
        if (sweep > 3 && std::fabs(app) + std::fabs(apq) == std::fabs(app) &&
            std::fabs(aqq) + std::fabs(apq) == std::fabs(aqq)) {
          a[p * m + q] = a[q * m + p] = 0.0;
          continue;
        }
        // The rotation J (c at pp and qq, s at pq, -s at qp) with (J^T A J)_pq = 0:
        // t = tan of its angle, the smaller root of t^2 + 2 theta t - 1 = 0.
        const double theta = (aqq - app) / (2.0 * apq);
        const double t = std::fabs(theta) > 1e150
                             ? 0.5 / theta
                             : std::copysign(1.0, theta) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0);
        const double s = t * c;
        for (size_t k = 0; k < m; ++k) {  // A J
          const double akp = a[k * m + p], akq = a[k * m + q];
          a[k * m + p] = c * akp - s * akq;
          a[k * m + q] = s * akp + c * akq;
        }
        for (size_t k = 0; k < m; ++k) {  // J^T (A J)
          const double apk = a[p * m + k], aqk = a[q * m + k];
          a[p * m + k] = c * apk - s * aqk;
          a[q * m + k] = s * apk + c * aqk;
        }
        a[p * m + q] = a[q * m + p] = 0.0;
        if (vectors) {
          for (size_t k = 0; k < m; ++k) {  // V J
            const double vkp = v[k * m + p], vkq = v[k * m + q];
            v[k * m + p] = c * vkp - s * vkq;
            v[k * m + q] = s * vkp + c * vkq;
          }
        }
      }
    }
  }
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return a[x * m + x] < a[y * m + y]; });
  std::vector<double> values(m);
  for (size_t i = 0; i < m; ++i) values[i] = a[order[i] * m + order[i]];
  if (vectors) {
    vectors->assign(m * m, 0.0);
    for (size_t k = 0; k < m; ++k)
      for (size_t i = 0; i < m; ++i) (*vectors)[k * m + i] = v[k * m + order[i]];
  }
  return values;
}

}  // namespace kvs
