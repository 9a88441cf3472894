//! Reading an AF_PACKET socket several frames per system call (`recvmmsg`).
//!
//! Why: the real-time switch read its ports one frame per `recv` in Python, and each frame then
//! crossed a Python port, a Python receive callback and the walk's entry. Here one call reads up
//! to `BATCH` frames into buffers kept for the next call, and `V1Walk.receive_socket` hands
//! each to the engine's walk without a Python object per step. The socket stays the Python
//! port's (runtime/ports.py opens, configures and closes it); this module only reads it.

use std::io;

/// Frames read per system call at most.
pub const BATCH: usize = 32;
/// One buffer's size: runtime/ports.py's `RX_BUFFER` (a 64 KiB GSO frame with its headers fits).
pub const BUF: usize = 1 << 17;

/// Room for one frame's ancillary data: a `SCM_TIMESTAMPNS` timespec and its header.
const CTRL: usize = 64;

/// Buffers for one `recvmmsg`, reused from call to call.
pub struct RxBatch {
    bufs: Vec<Vec<u8>>,
    lens: [usize; BATCH],
    /// Each frame's ancillary data (u64s: aligned as a `cmsghdr` must be).
    ctrl: Vec<[u64; CTRL / 8]>,
    /// Each frame's kernel arrival time, CLOCK_REALTIME ns, where the socket has `SO_TIMESTAMPNS`.
    stamps: [Option<i64>; BATCH],
    /// Whether `recv` asks for the ancillary data (`with_timestamps`): a switch's ports do not.
    stamped: bool,
}

impl RxBatch {
    pub fn new() -> Self {
        RxBatch {
            bufs: (0..BATCH).map(|_| vec![0u8; BUF]).collect(),
            lens: [0; BATCH],
            ctrl: vec![[0; CTRL / 8]; BATCH],
            stamps: [None; BATCH],
            stamped: false,
        }
    }

    /// A batch that reads each frame's kernel arrival time too (`stamp_ns`), from a socket with
    /// `SO_TIMESTAMPNS` (`enable_timestamps`).
    pub fn with_timestamps() -> Self {
        RxBatch {
            stamped: true,
            ..RxBatch::new()
        }
    }

    /// Read up to `max` (at most `BATCH`) frames from the non-blocking socket `fd`. Ok(0): none
    /// waiting. A frame's length is its length on the wire (MSG_TRUNC), so a frame longer than
    /// the buffer shows as longer than `BUF`.
    pub fn recv(&mut self, fd: i32, max: usize) -> io::Result<usize> {
        let n = max.clamp(1, BATCH);
        let mut iov: Vec<libc::iovec> = self.bufs[..n]
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let stamped = self.stamped;
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .zip(self.ctrl.iter_mut())
            .map(|(v, c)| {
                // SAFETY: mmsghdr is plain data; all-zero is a valid empty header.
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = v;
                h.msg_hdr.msg_iovlen = 1;
                if stamped {
                    h.msg_hdr.msg_control = c.as_mut_ptr().cast();
                    h.msg_hdr.msg_controllen = CTRL;
                }
                h
            })
            .collect();
        // SAFETY: `msgs` and the iovecs and buffers they point to live across the call, and
        // `n` is their length.
        let got = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(err),
            };
        }
        let got = got as usize;
        for (i, m) in msgs[..got].iter().enumerate() {
            self.lens[i] = m.msg_len as usize;
            self.stamps[i] = if stamped {
                timestamp_ns(&m.msg_hdr)
            } else {
                None
            };
        }
        Ok(got)
    }

    /// When frame `i` of the last `recv` reached the socket (CLOCK_REALTIME ns), if the socket
    /// has `SO_TIMESTAMPNS` (see `enable_timestamps`).
    pub fn stamp_ns(&self, i: usize) -> Option<i64> {
        self.stamps[i]
    }

    /// Frame `i` of the last `recv` as read (at most `BUF` bytes) and its length on the wire.
    pub fn frame(&self, i: usize) -> (&[u8], usize) {
        let len = self.lens[i];
        (&self.bufs[i][..len.min(BUF)], len)
    }
}

/// The `SCM_TIMESTAMPNS` of a message `recvmmsg` filled in (None: it has none).
fn timestamp_ns(hdr: &libc::msghdr) -> Option<i64> {
    // SAFETY: `hdr` is a header the kernel filled in: its control pointer and length describe
    // the ancillary data it wrote, which the CMSG macros walk within those bounds.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec);
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}

/// Ask the kernel for each frame's arrival time on socket `fd` (`SO_TIMESTAMPNS`), which
/// `RxBatch::stamp_ns` then gives.
pub fn enable_timestamps(fd: i32) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `on` lives across the call and its size is given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC now, ns: what turns a kernel timestamp into monotonic time.
pub fn realtime_offset_ns() -> i64 {
    let read = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec for the call to fill.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    };
    read(libc::CLOCK_REALTIME) - read(libc::CLOCK_MONOTONIC)
}

/// What `send_batch` did with a batch of frames.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxOutcome {
    /// Frames the kernel took.
    pub sent: u64,
    /// Frames dropped as a full NIC queue drops them (`EAGAIN`, `ENOBUFS`, `ENETDOWN`, `ENXIO`).
    pub dropped: u64,
    /// Frames refused for another reason (a frame longer than the interface's MTU: `EMSGSIZE`),
    /// not counted in `dropped`: Python's port raised these as errors.
    pub refused: u64,
    /// The errno of the first refused frame (the caller reports it).
    pub error: Option<i32>,
}

/// Send `frames` on the non-blocking AF_PACKET socket `fd` with as few `sendmmsg` calls as the
/// kernel allows, each frame after `prefix` (a `virtio_net_hdr` asking for nothing, or empty).
///
/// Why: one `send` per frame was a system call per frame on the transmit side, as `recv` was on
/// the receive side. A frame the kernel refuses costs only that frame, as runtime/ports.py's
/// `_transmit` does one frame at a time: the rest of the batch is still sent.
pub fn send_batch(fd: i32, prefix: &[u8], frames: &[Vec<u8>]) -> TxOutcome {
    let mut out = TxOutcome::default();
    let mut iov: Vec<[libc::iovec; 2]> = frames
        .iter()
        .map(|f| {
            [
                libc::iovec {
                    iov_base: prefix.as_ptr() as *mut libc::c_void,
                    iov_len: prefix.len(),
                },
                libc::iovec {
                    iov_base: f.as_ptr() as *mut libc::c_void,
                    iov_len: f.len(),
                },
            ]
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = iov
        .iter_mut()
        .map(|v| {
            // SAFETY: mmsghdr is plain data; all-zero is a valid empty header.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = v.as_mut_ptr();
            h.msg_hdr.msg_iovlen = 2;
            h
        })
        .collect();
    let mut i = 0;
    while i < msgs.len() {
        // SAFETY: `msgs[i..]`, their iovecs, `prefix` and `frames` live across the call; the
        // kernel only reads the buffers.
        let got = unsafe {
            libc::sendmmsg(
                fd,
                msgs[i..].as_mut_ptr(),
                (msgs.len() - i) as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        if got > 0 {
            out.sent += got as u64;
            i += got as usize;
            continue;
        }
        let err = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if err == libc::EINTR {
            continue;
        }
        if [libc::EAGAIN, libc::ENOBUFS, libc::ENETDOWN, libc::ENXIO].contains(&err) {
            out.dropped += 1;
        } else {
            out.refused += 1;
            out.error.get_or_insert(err);
        }
        i += 1;
    }
    out
}

/// `PACKET_VNET_HDR` and `PACKET_IGNORE_OUTGOING` (linux/if_packet.h).
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// Whether the packet socket `fd` ignores the frames sent on its interface (false when the
/// kernel cannot say).
fn ignores_outgoing(fd: i32) -> bool {
    let mut on: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `on` is writable for `len` bytes.
    let got = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            (&mut on as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    got == 0 && on != 0
}

/// A send-only AF_PACKET socket on the interface the socket `fd` is bound to, non-blocking,
/// taking a `virtio_net_hdr` before each frame when `vnet_hdr`. Bound with protocol 0, it
/// receives nothing.
///
/// Why a socket of its own for sending: the kernel frees each sent frame with `sock_wfree`, which
/// wakes whoever waits on the sending socket; the port's socket has the loop's epoll waiting on
/// it (for reading), so every frame sent cost a wake-up call under the socket's wait-queue lock,
/// about 5 % of the switch's CPU at overload in a perf profile (the commit that added this socket). No one waits on this one.
/// Only for a port whose receiving socket ignores outgoing frames (PACKET_IGNORE_OUTGOING):
/// otherwise it would read back what this one sends (`EOPNOTSUPP` then).
pub fn open_tx_socket(fd: i32, vnet_hdr: bool) -> io::Result<i32> {
    if !ignores_outgoing(fd) {
        return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
    }
    // SAFETY: sockaddr_ll is plain data; all-zero is valid.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `addr` is writable for `len` bytes.
    if unsafe { libc::getsockname(fd, (&mut addr as *mut libc::sockaddr_ll).cast(), &mut len) } < 0
    {
        return Err(io::Error::last_os_error());
    }
    if addr.sll_family != libc::AF_PACKET as u16 || addr.sll_ifindex == 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: plain system call; the fd is closed below on error, else by the caller.
    let tx = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if tx < 0 {
        return Err(io::Error::last_os_error());
    }
    let on: libc::c_int = 1;
    let bind_to = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: 0,
        sll_ifindex: addr.sll_ifindex,
        ..addr
    };
    // SAFETY: `on` and `bind_to` are valid for the sizes given, across the calls.
    let failed = unsafe {
        (vnet_hdr
            && libc::setsockopt(
                tx,
                libc::SOL_PACKET,
                PACKET_VNET_HDR,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) < 0)
            || libc::bind(
                tx,
                (&bind_to as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            ) < 0
    };
    if failed {
        let err = io::Error::last_os_error();
        // SAFETY: ours, closed once.
        unsafe { libc::close(tx) };
        return Err(err);
    }
    Ok(tx)
}
