#pragma once
// Eigenvalues (and optionally eigenvectors) of a real symmetric matrix by the
// cyclic Jacobi method, in plain double arithmetic with a fixed order of
// operations. The Fréchet distance uses it instead of LAPACK because its
// square-root term turns a rounding difference in a near-zero eigenvalue into a
// visible one in the distance (1e-7 for a 128-feature covariance of a few
// images), and LAPACK's results change with the number of threads and the CPU's
// instruction set: a bench merged from shards on other machines, or merged by a
// process with another thread count, must give the one-process number exactly.
// Jacobi is also the most accurate of the symmetric methods for small
// eigenvalues, and at the 128 x 128 of the demo classifier's features it takes a
// few tens of milliseconds. Torch-free.
#include <cstdint>
#include <vector>

namespace kvs {

// `matrix` is n x n, row-major, symmetric (only its values matter, not whether
// both triangles agree to the last bit: the upper triangle is used). Returns the
// n eigenvalues in ascending order; with `vectors`, also the eigenvectors as the
// columns of an n x n row-major matrix, in the same order. Throws
// InvalidArgumentError for a size that does not fit or a value that is not finite.
std::vector<double> symmetric_eigen(const std::vector<double>& matrix, int64_t n,
                                    std::vector<double>* vectors = nullptr);

}  // namespace kvs
