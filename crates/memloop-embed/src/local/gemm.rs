//! The one place with `unsafe`: a bounds-checked wrapper over matrixmultiply's
//! strided single-precision GEMM, which takes raw pointers.
#![allow(unsafe_code)]

/// A row-major-or-strided view of a matrix inside a slice.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl View<'_> {
    /// Largest index touched plus one; 0 for an empty matrix.
    fn extent(rows: usize, cols: usize, rs: usize, cs: usize) -> usize {
        if rows == 0 || cols == 0 {
            0
        } else {
            (rows - 1) * rs + (cols - 1) * cs + 1
        }
    }
}

/// c = alpha·a·b + beta·c, where c is `a.rows × b.cols` at `c_row_stride` (column stride 1).
/// Returns false (and does nothing) when the shapes or slices do not fit.
pub fn sgemm(
    alpha: f32,
    a: View<'_>,
    b: View<'_>,
    beta: f32,
    c: &mut [f32],
    c_row_stride: usize,
) -> bool {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let fits = a.cols == b.rows
        && View::extent(m, k, a.row_stride, a.col_stride) <= a.data.len()
        && View::extent(k, n, b.row_stride, b.col_stride) <= b.data.len()
        && View::extent(m, n, c_row_stride, 1) <= c.len()
        && c_row_stride >= n;
    if !fits {
        return false;
    }
    if m == 0 || n == 0 {
        return true;
    }
    let to_isize = |x: usize| isize::try_from(x).unwrap_or(isize::MAX);
    // SAFETY: every index the kernel reads or writes is below the extents checked above.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.data.as_ptr(),
            to_isize(a.row_stride),
            to_isize(a.col_stride),
            b.data.as_ptr(),
            to_isize(b.row_stride),
            to_isize(b.col_stride),
            beta,
            c.as_mut_ptr(),
            to_isize(c_row_stride),
            1,
        );
    }
    true
}
