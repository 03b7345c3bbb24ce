/* The benchmark loop nests by hand, parallelized with `#pragma omp parallel for` (and its
 * reduction on array sections, non-rectangular collapse) as one
 * would write them in C (gcc -O3 -march=native -fopenmp).  Each function has the same
 * loops as its Python kernel; the harness passes arguments by parameter name, so a
 * prototype must stay on one line. */
#include <math.h>
#include <stdint.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* -- linear algebra -------------------------------------------------------------- */

void gemm(int64_t ni, int64_t nj, int64_t nk, double alpha, double beta, double C[ni][nj], double A[ni][nk], double B[nk][nj])
{
    #pragma omp parallel for
    for (int64_t i = 0; i < ni; i++) {
        for (int64_t j = 0; j < nj; j++)
            C[i][j] *= beta;
        for (int64_t k = 0; k < nk; k++)
            for (int64_t j = 0; j < nj; j++)
                C[i][j] += alpha * A[i][k] * B[k][j];
    }
}

void k2mm(int64_t ni, int64_t nj, int64_t nk, int64_t nl, double alpha, double beta, double tmp[ni][nj], double A[ni][nk], double B[nk][nj], double C[nj][nl], double D[ni][nl])
{
    #pragma omp parallel for
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) {
            tmp[i][j] = 0.0;
            for (int64_t k = 0; k < nk; k++)
                tmp[i][j] += alpha * A[i][k] * B[k][j];
        }
    #pragma omp parallel for
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nl; j++) {
            D[i][j] *= beta;
            for (int64_t k = 0; k < nj; k++)
                D[i][j] += tmp[i][k] * C[k][j];
        }
}

/* y = A^T (A x): tmp and y by rows, y an array reduction */
void atax(int64_t m, int64_t n, double A[m][n], double x[n], double y[n], double tmp[m])
{
    #pragma omp parallel for
    for (int64_t j = 0; j < n; j++)
        y[j] = 0.0;
    #pragma omp parallel for reduction(+:y[:n])
    for (int64_t i = 0; i < m; i++) {
        tmp[i] = 0.0;
        for (int64_t j = 0; j < n; j++)
            tmp[i] += A[i][j] * x[j];
        for (int64_t j = 0; j < n; j++)
            y[j] += A[i][j] * tmp[i];
    }
}

/* q = A p and s = A^T r by rows, s an array reduction */
void bicg(int64_t n, int64_t m, double A[n][m], double s[m], double q[n], double p[m], double r[n])
{
    #pragma omp parallel for
    for (int64_t j = 0; j < m; j++)
        s[j] = 0.0;
    #pragma omp parallel for reduction(+:s[:m])
    for (int64_t i = 0; i < n; i++) {
        q[i] = 0.0;
        for (int64_t j = 0; j < m; j++) {
            s[j] += r[i] * A[i][j];
            q[i] += A[i][j] * p[j];
        }
    }
}

void mvt(int64_t n, double x1[n], double x2[n], double y_1[n], double y_2[n], double A[n][n])
{
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            x1[i] += A[i][j] * y_1[j];
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            x2[i] += A[j][i] * y_2[j];
}

void gesummv(int64_t n, double alpha, double beta, double A[n][n], double B[n][n], double tmp[n], double x[n], double y[n])
{
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++) {
        tmp[i] = 0.0;
        y[i] = 0.0;
        for (int64_t j = 0; j < n; j++) {
            tmp[i] += A[i][j] * x[j];
            y[i] += B[i][j] * x[j];
        }
        y[i] = alpha * tmp[i] + beta * y[i];
    }
}

/* C = alpha A A^T + beta C on the lower triangle */
void syrk(int64_t n, int64_t m, double alpha, double beta, double C[n][n], double A[n][m])
{
    #pragma omp parallel for collapse(2)
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            C[i][j] *= beta;
            for (int64_t k = 0; k < m; k++)
                C[i][j] += alpha * A[i][k] * A[j][k];
        }
}

/* A[r][q][:] = A[r][q][:] C4, through a private acc[:] */
void doitgen(int64_t nr, int64_t nq, int64_t np_, double A[nr][nq][np_], double C4[np_][np_])
{
    #pragma omp parallel for collapse(2)
    for (int64_t r = 0; r < nr; r++)
        for (int64_t q = 0; q < nq; q++) {
            double acc[np_];
            for (int64_t p = 0; p < np_; p++)
                acc[p] = 0.0;
            for (int64_t p = 0; p < np_; p++)
                for (int64_t s = 0; s < np_; s++)
                    acc[p] += A[r][q][s] * C4[s][p];
            for (int64_t p = 0; p < np_; p++)
                A[r][q][p] = acc[p];
        }
}

/* -- data mining ----------------------------------------------------------------- */

void covariance(int64_t m, int64_t n, double float_n, double data[n][m], double cov[m][m], double mean[m])
{
    #pragma omp parallel for
    for (int64_t j = 0; j < m; j++) {
        mean[j] = 0.0;
        for (int64_t i = 0; i < n; i++)
            mean[j] += data[i][j];
        mean[j] /= float_n;
    }
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++)
            data[i][j] -= mean[j];
    #pragma omp parallel for
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = i; j < m; j++) {
            cov[i][j] = 0.0;
            for (int64_t k = 0; k < n; k++)
                cov[i][j] += data[k][i] * data[k][j];
            cov[i][j] /= (float_n - 1.0);
            cov[j][i] = cov[i][j];
        }
}

void correlation(int64_t m, int64_t n, double float_n, double data[n][m], double corr[m][m], double mean[m], double stddev[m])
{
    const double eps = 0.1;
    #pragma omp parallel for
    for (int64_t j = 0; j < m; j++) {
        mean[j] = 0.0;
        for (int64_t i = 0; i < n; i++)
            mean[j] += data[i][j];
        mean[j] /= float_n;
    }
    #pragma omp parallel for
    for (int64_t j = 0; j < m; j++) {
        stddev[j] = 0.0;
        for (int64_t i = 0; i < n; i++)
            stddev[j] += (data[i][j] - mean[j]) * (data[i][j] - mean[j]);
        stddev[j] /= float_n;
        stddev[j] = sqrt(stddev[j]);
        stddev[j] = stddev[j] <= eps ? 1.0 : stddev[j];
    }
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            data[i][j] -= mean[j];
            data[i][j] /= sqrt(float_n) * stddev[j];
        }
    #pragma omp parallel for
    for (int64_t i = 0; i < m - 1; i++) {
        corr[i][i] = 1.0;
        for (int64_t j = i + 1; j < m; j++) {
            corr[i][j] = 0.0;
            for (int64_t k = 0; k < n; k++)
                corr[i][j] += data[k][i] * data[k][j];
            corr[j][i] = corr[i][j];
        }
    }
    corr[m - 1][m - 1] = 1.0;
}

/* -- stencils -------------------------------------------------------------------- */

void jacobi_2d(int64_t tsteps, int64_t n, double A[n][n], double B[n][n])
{
    for (int64_t t = 0; t < tsteps; t++) {
        #pragma omp parallel for
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i + 1][j] + A[i - 1][j]);
        #pragma omp parallel for
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][j + 1] + B[i + 1][j] + B[i - 1][j]);
    }
}

void heat_3d(int64_t tsteps, int64_t n, double A[n][n][n], double B[n][n][n])
{
    for (int64_t t = 1; t <= tsteps; t++) {
        #pragma omp parallel for
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                for (int64_t k = 1; k < n - 1; k++)
                    B[i][j][k] = 0.125 * (A[i + 1][j][k] - 2.0 * A[i][j][k] + A[i - 1][j][k])
                               + 0.125 * (A[i][j + 1][k] - 2.0 * A[i][j][k] + A[i][j - 1][k])
                               + 0.125 * (A[i][j][k + 1] - 2.0 * A[i][j][k] + A[i][j][k - 1])
                               + A[i][j][k];
        #pragma omp parallel for
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                for (int64_t k = 1; k < n - 1; k++)
                    A[i][j][k] = 0.125 * (B[i + 1][j][k] - 2.0 * B[i][j][k] + B[i - 1][j][k])
                               + 0.125 * (B[i][j + 1][k] - 2.0 * B[i][j][k] + B[i][j - 1][k])
                               + 0.125 * (B[i][j][k + 1] - 2.0 * B[i][j][k] + B[i][j][k - 1])
                               + B[i][j][k];
    }
}

void fdtd_2d(int64_t tmax, int64_t nx, int64_t ny, double ex[nx][ny], double ey[nx][ny], double hz[nx][ny], double fict[tmax])
{
    for (int64_t t = 0; t < tmax; t++) {
        #pragma omp parallel for
        for (int64_t j = 0; j < ny; j++)
            ey[0][j] = fict[t];
        #pragma omp parallel for
        for (int64_t i = 1; i < nx; i++)
            for (int64_t j = 0; j < ny; j++)
                ey[i][j] -= 0.5 * (hz[i][j] - hz[i - 1][j]);
        #pragma omp parallel for
        for (int64_t i = 0; i < nx; i++)
            for (int64_t j = 1; j < ny; j++)
                ex[i][j] -= 0.5 * (hz[i][j] - hz[i][j - 1]);
        #pragma omp parallel for
        for (int64_t i = 0; i < nx - 1; i++)
            for (int64_t j = 0; j < ny - 1; j++)
                hz[i][j] -= 0.7 * (ex[i][j + 1] - ex[i][j] + ey[i + 1][j] - ey[i][j]);
    }
}

/* Gauss-Seidel in place: point (i, j) needs the new (i-1, *) and (i, j-1) and the old
 * (i, j+1) and (i+1, *), so the points with the same w = 2i + j are independent and the
 * fronts w = 3, 4, ... run in order. */
void seidel_2d(int64_t tsteps, int64_t n, double A[n][n])
{
    for (int64_t t = 0; t < tsteps; t++)
        for (int64_t w = 3; w <= 3 * (n - 2); w++) {
            const int64_t lo = MAX(1, (w - n + 3) / 2), hi = MIN(n - 2, (w - 1) / 2);
            #pragma omp parallel for
            for (int64_t i = lo; i <= hi; i++) {
                const int64_t j = w - 2 * i;
                A[i][j] = (A[i - 1][j - 1] + A[i - 1][j] + A[i - 1][j + 1]
                         + A[i][j - 1] + A[i][j] + A[i][j + 1]
                         + A[i + 1][j - 1] + A[i + 1][j] + A[i + 1][j + 1]) / 9.0;
            }
        }
}

/* -- dynamic programming --------------------------------------------------------- */

void floyd_warshall(int64_t n, int32_t path[n][n])
{
    for (int64_t k = 0; k < n; k++) {
        #pragma omp parallel for
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                path[i][j] = path[i][j] < path[i][k] + path[k][j] ? path[i][j] : path[i][k] + path[k][j];
    }
}

/* RNA folding; the cells (i, i + d) of one diagonal d are independent */
void nussinov(int64_t n, int32_t seq[n], int32_t table[n][n])
{
    for (int64_t d = 1; d < n; d++) {
        #pragma omp parallel for
        for (int64_t i = 0; i < n - d; i++) {
            const int64_t j = i + d;
            int32_t t = table[i][j];
            if (j - 1 >= 0)
                t = MAX(t, table[i][j - 1]);
            if (i + 1 < n)
                t = MAX(t, table[i + 1][j]);
            if (j - 1 >= 0 && i + 1 < n) {
                if (i < j - 1)
                    t = MAX(t, table[i + 1][j - 1] + (seq[i] + seq[j] == 3));
                else
                    t = MAX(t, table[i + 1][j - 1]);
            }
            for (int64_t k = i + 1; k < j; k++)
                t = MAX(t, table[i][k] + table[k + 1][j]);
            table[i][j] = t;
        }
    }
}

/* -- solvers ---------------------------------------------------------------------- */

/* A = L U in place (L unit lower), right-looking: column k of L, then the trailing update */
void lu(int64_t n, double A[n][n])
{
    for (int64_t k = 0; k < n; k++) {
        #pragma omp parallel for
        for (int64_t i = k + 1; i < n; i++) {
            A[i][k] /= A[k][k];
            for (int64_t j = k + 1; j < n; j++)
                A[i][j] -= A[i][k] * A[k][j];
        }
    }
}

/* A = L L^T: column i of L below the diagonal into A, 1 / L[i][i] into p */
void cholesky(int64_t n, double A[n][n], double p[n])
{
    for (int64_t i = 0; i < n; i++) {
        double x = A[i][i];
        for (int64_t k = 0; k < i; k++)
            x -= A[i][k] * A[i][k];
        const double pi = 1.0 / sqrt(x);
        p[i] = pi;
        #pragma omp parallel for
        for (int64_t j = i + 1; j < n; j++) {
            double y = A[i][j];
            for (int64_t k = 0; k < i; k++)
                y -= A[j][k] * A[i][k];
            A[j][i] = y * pi;
        }
    }
}
