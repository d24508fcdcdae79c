//! The AMX path: weights re-laid once at load into bfloat16 tiles, activations
//! rounded to bfloat16 at each product, `tdpbf16ps` accumulating in f32.
//!
//! A tile is 16 rows of 64 bytes. `tdpbf16ps c, a, b` adds to the 16×16 f32
//! tile c the product of a (16 rows × 32 bfloat16 along k: row-major
//! activations as they are) and b (32 × 16 along k × n, stored as 16 rows
//! of k-pairs: row r holds, for each of the 16 columns, the values at k = 2r
//! and 2r + 1). The kernel keeps 2 × 2 accumulator tiles (32 rows × 32
//! columns of c), so each loaded tile of a or b feeds two products.
//!
//! The tile unit needs the kernel's leave: `arch_prctl(ARCH_REQ_XCOMP_PERM,
//! XFEATURE_XTILEDATA)`, asked once per process, after which every thread
//! may use it.

use std::ops::Range;

use super::{split_columns, to_bf16};

/// Rows of a tile.
const ROWS: usize = 16;
/// bfloat16 values along k in one tile row (64 bytes).
const KPER: usize = 32;
/// f32 columns of an accumulator tile.
const COLS: usize = 16;
/// Columns of c one kernel step covers (two accumulator tiles).
const PAIR: usize = 2 * COLS;

/// One 64-byte tile row, cache-line aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Line([u16; KPER]);

/// A `k × n` weight matrix in bfloat16 tiles: for each block of 16 columns,
/// for each block of 32 along k, one tile (16 lines) in the layout b above.
pub struct Tiles {
    k: usize,
    n: usize,
    lines: Vec<Line>,
}

impl Tiles {
    /// Lays out `w` (k × n, row-major); None unless k is a multiple of 32
    /// and n of 32.
    pub fn new(w: &[f32], k: usize, n: usize) -> Option<Tiles> {
        if k == 0 || !k.is_multiple_of(KPER) || !n.is_multiple_of(PAIR) || w.len() != k * n {
            return None;
        }
        let mut lines = Vec::with_capacity(n / COLS * k / KPER * ROWS);
        for nb in 0..n / COLS {
            for kb in 0..k / KPER {
                for r in 0..ROWS {
                    let mut line = Line([0; KPER]);
                    for j in 0..COLS {
                        for e in 0..2 {
                            line.0[2 * j + e] =
                                to_bf16(w[(kb * KPER + 2 * r + e) * n + nb * COLS + j]);
                        }
                    }
                    lines.push(line);
                }
            }
        }
        Some(Tiles { k, n, lines })
    }
}

/// True when the CPU has AMX-TILE and AMX-BF16 (with AVX-512BW, for the
/// rounding of activations) and the kernel grants this process the tile
/// state. Asked once per process.
pub fn available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| cpu_has_amx() && request_permission())
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn cpu_has_amx() -> bool {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    if __cpuid(0).eax < 7 {
        return false;
    }
    let edx = __cpuid_count(7, 0).edx;
    let (amx_bf16, amx_tile) = (1 << 22, 1 << 24);
    edx & amx_bf16 != 0
        && edx & amx_tile != 0
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn cpu_has_amx() -> bool {
    false
}

/// `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`: true when granted.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request_permission() -> bool {
    const SYS_ARCH_PRCTL: i64 = 158;
    const ARCH_REQ_XCOMP_PERM: u64 = 0x1023;
    const XFEATURE_XTILEDATA: u64 = 18;
    let ret: i64;
    // SAFETY: this system call only asks the kernel to let this process's
    // threads use the AMX tile state; it reads and writes none of our memory.
    // `syscall` overwrites rcx and r11, declared as clobbered; no stack use.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") SYS_ARCH_PRCTL => ret,
            in("rdi") ARCH_REQ_XCOMP_PERM,
            in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret == 0
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn request_permission() -> bool {
    false
}

/// c[m × n] += a[m × k] · t, with a row-major at stride k and c at stride n,
/// the column pairs shared among `threads`. False (doing nothing) when the
/// slices do not fit or AMX is unavailable.
pub fn product(a: &[f32], m: usize, t: &Tiles, c: &mut [f32], threads: usize) -> bool {
    if a.len() < m * t.k || c.len() < m * t.n || !available() {
        return false;
    }
    if m == 0 {
        return true;
    }
    let a16 = to_lines(&a[..m * t.k], m, t.k);
    split_columns(m, t.n, PAIR, t.n / PAIR, threads, c, |pairs, part, ldc| {
        // SAFETY: `available()` held above (AMX granted); `a16` holds k/32
        // lines for each of m rows rounded up to 32 (`to_lines`); `pairs` lies
        // within t's n/32 pairs and `part` is m rows of `ldc` ≥ 32·pairs.len()
        // columns (`split_columns`).
        #[cfg(target_arch = "x86_64")]
        unsafe {
            kernel(&a16, m, t, pairs, part, ldc)
        }
    })
}

/// a (m × k) in bfloat16 lines, row-major, with zero rows up to a multiple of
/// 32 so the kernel always loads whole tiles.
fn to_lines(a: &[f32], m: usize, k: usize) -> Vec<Line> {
    let mut lines = vec![Line([0; KPER]); m.next_multiple_of(2 * ROWS) * (k / KPER)];
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `available()` checked AVX-512F and AVX-512BW before any product.
        unsafe { round_avx512(a, &mut lines) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    round(a, &mut lines);
    lines
}

/// The rounding loop compiled for AVX-512, where it vectorises 16 wide.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn round_avx512(a: &[f32], lines: &mut [Line]) {
    round(a, lines)
}

#[inline(always)]
fn round(a: &[f32], lines: &mut [Line]) {
    for (line, chunk) in lines.iter_mut().zip(a.chunks_exact(KPER)) {
        for (d, s) in line.0.iter_mut().zip(chunk) {
            *d = to_bf16(*s);
        }
    }
}

/// The tile configuration: palette 1, all eight tiles 16 rows × 64 bytes.
#[repr(C, align(64))]
struct Config([u8; 64]);

impl Config {
    fn full() -> Config {
        let mut c = [0u8; 64];
        c[0] = 1;
        for t in 0..8 {
            c[16 + 2 * t..18 + 2 * t].copy_from_slice(&64u16.to_le_bytes());
            c[48 + t] = ROWS as u8;
        }
        Config(c)
    }
}

/// 32 rows × 32 columns of c, for the last rows of a product (fewer than 32).
#[repr(C, align(64))]
struct Stage([f32; 2 * ROWS * PAIR]);

/// Column pairs `pairs` of t over all m rows into c (whose column 0 is pair
/// `pairs.start`). Tiles 0–3 accumulate, 4–5 hold a, 6–7 hold b.
///
/// # Safety
/// AMX must be granted (`available()`). `a` must hold `t.k / 32` lines for
/// each of `m.next_multiple_of(32)` rows; `pairs` must lie within
/// `0..t.n / 32`; c must hold `(m - 1) · ldc + 32 · pairs.len()` values with
/// `ldc ≥ 32 · pairs.len()`. The tile loads and stores use raw pointers.
#[cfg(target_arch = "x86_64")]
unsafe fn kernel(a: &[Line], m: usize, t: &Tiles, pairs: Range<usize>, c: &mut [f32], ldc: usize) {
    use std::arch::asm;
    let cfg = Config::full();
    // SAFETY (for each asm block below): the caller's contract bounds every
    // address: a rows r0..r0 + 32 exist (padding), b tiles lie within
    // t.lines, and c rows r0..r0 + 32 exist or the stage stands in for them.
    // The tile registers are not used by compiled code, so state kept in
    // them between blocks is undisturbed.
    asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
    let kbs = t.k / KPER;
    let a_stride = t.k * 2;
    let line = 64usize;
    let mut stage = Stage([0.0; 2 * ROWS * PAIR]);
    for (i, p) in pairs.enumerate() {
        let b0 = t.lines.as_ptr().add(2 * p * kbs * ROWS);
        let b1 = b0.add(kbs * ROWS);
        let mut r0 = 0;
        while r0 < m {
            let rows = (m - r0).min(2 * ROWS);
            let staged = rows < 2 * ROWS;
            let (c0, cs) = if staged {
                stage.0.fill(0.0);
                for r in 0..rows {
                    let src = (r0 + r) * ldc + PAIR * i;
                    stage.0[r * PAIR..(r + 1) * PAIR].copy_from_slice(&c[src..src + PAIR]);
                }
                (stage.0.as_mut_ptr(), PAIR * 4)
            } else {
                (c.as_mut_ptr().add(r0 * ldc + PAIR * i), ldc * 4)
            };
            let c1 = c0.add(COLS);
            let c2 = c0.add(ROWS * cs / 4);
            let c3 = c2.add(COLS);
            let a0 = a.as_ptr().add(r0 * kbs);
            let a1 = a0.add(ROWS * kbs);
            if rows > ROWS {
                asm!(
                    "tileloadd tmm0, [{c0} + {cs}*1]",
                    "tileloadd tmm1, [{c1} + {cs}*1]",
                    "tileloadd tmm2, [{c2} + {cs}*1]",
                    "tileloadd tmm3, [{c3} + {cs}*1]",
                    c0 = in(reg) c0, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3,
                    cs = in(reg) cs,
                    options(nostack, readonly),
                );
                for kb in 0..kbs {
                    asm!(
                        "tileloadd tmm4, [{a0} + {sa}*1]",
                        "tileloadd tmm5, [{a1} + {sa}*1]",
                        "tileloadd tmm6, [{b0} + {bs}*1]",
                        "tileloadd tmm7, [{b1} + {bs}*1]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        "tdpbf16ps tmm2, tmm5, tmm6",
                        "tdpbf16ps tmm3, tmm5, tmm7",
                        a0 = in(reg) a0.add(kb), a1 = in(reg) a1.add(kb),
                        b0 = in(reg) b0.add(kb * ROWS), b1 = in(reg) b1.add(kb * ROWS),
                        sa = in(reg) a_stride, bs = in(reg) line,
                        options(nostack, readonly),
                    );
                }
                asm!(
                    "tilestored [{c0} + {cs}*1], tmm0",
                    "tilestored [{c1} + {cs}*1], tmm1",
                    "tilestored [{c2} + {cs}*1], tmm2",
                    "tilestored [{c3} + {cs}*1], tmm3",
                    c0 = in(reg) c0, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3,
                    cs = in(reg) cs,
                    options(nostack),
                );
            } else {
                // At most 16 rows left (a query): half the tiles, half the work.
                asm!(
                    "tileloadd tmm0, [{c0} + {cs}*1]",
                    "tileloadd tmm1, [{c1} + {cs}*1]",
                    c0 = in(reg) c0, c1 = in(reg) c1, cs = in(reg) cs,
                    options(nostack, readonly),
                );
                for kb in 0..kbs {
                    asm!(
                        "tileloadd tmm4, [{a0} + {sa}*1]",
                        "tileloadd tmm6, [{b0} + {bs}*1]",
                        "tileloadd tmm7, [{b1} + {bs}*1]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        a0 = in(reg) a0.add(kb),
                        b0 = in(reg) b0.add(kb * ROWS), b1 = in(reg) b1.add(kb * ROWS),
                        sa = in(reg) a_stride, bs = in(reg) line,
                        options(nostack, readonly),
                    );
                }
                asm!(
                    "tilestored [{c0} + {cs}*1], tmm0",
                    "tilestored [{c1} + {cs}*1], tmm1",
                    c0 = in(reg) c0, c1 = in(reg) c1, cs = in(reg) cs,
                    options(nostack),
                );
            }
            if staged {
                for r in 0..rows {
                    let dst = (r0 + r) * ldc + PAIR * i;
                    c[dst..dst + PAIR].copy_from_slice(&stage.0[r * PAIR..(r + 1) * PAIR]);
                }
            }
            r0 += rows;
        }
    }
    asm!("tilerelease", options(nostack, nomem));
}
