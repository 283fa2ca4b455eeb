import CEpoll
import Glibc

/// The system calls of the event path (the loop's wait, a transport's reads and writes, a
/// simulated line's datagrams), as Glibc's, minus the cancellation-point bookkeeping its wrappers do around every
/// call: gattway never cancels a thread, and that bookkeeping was about thirty instructions and
/// two atomic operations per call, four or five calls per notification. Same results: the byte
/// count, or -1 with `errno` set.
public enum SystemCall {
    /// `epoll_wait`, as `epoll_pwait` with no signal mask (the only form arm64 has).
    @inlinable
    public static func epollWait(_ epoll: Int32, _ events: UnsafeMutablePointer<epoll_event>, _ count: Int32, _ timeout: Int32) -> Int32 {
        gw_epoll_wait(epoll, events, count, timeout)
    }

    @inlinable
    public static func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        gw_read(descriptor, buffer, count)
    }

    @inlinable
    public static func write(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        gw_write(descriptor, bytes, count)
    }

    @inlinable
    public static func writev(_ descriptor: Int32, _ parts: UnsafePointer<iovec>, _ count: Int32) -> Int {
        gw_writev(descriptor, parts, count)
    }

    @inlinable
    public static func recv(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32) -> Int {
        gw_recv(descriptor, buffer, count, flags)
    }
}
