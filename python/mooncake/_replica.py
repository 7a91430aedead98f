"""The objects mooncake.store hands back besides codes: BufferHandle (get_buffer, batch_get_buffer) and the replica
descriptors of get_replica_desc / batch_get_replica_desc, with Mooncake's names (store_py.cpp)."""
import ctypes
import enum

# mmc's media (mmc.h MMC_MEDIA_*)
MEDIA_HBM, MEDIA_DRAM, MEDIA_SSD = 0, 1, 2


class BufferHandle(bytearray):
    """An object's bytes as Mooncake's BufferHandle: the buffer protocol (memoryview, torch.frombuffer, bytes()),
    len(), ptr() (the address, a Python int) and size(). The memory is the handle's own and stays valid while the
    handle lives; do not resize it (ptr() would move)."""
    __slots__ = ()

    def ptr(self):
        if not len(self):
            return 0
        return ctypes.addressof((ctypes.c_char * len(self)).from_buffer(self))

    def size(self):
        return len(self)


class ReplicaStatus(enum.IntEnum):
    UNDEFINED = 0
    INITIALIZED = 1
    PROCESSING = 2
    COMPLETE = 3
    REMOVED = 4
    FAILED = 5


class Descriptor:
    """A memory replica's buffer (Mooncake's AllocatedBuffer::Descriptor). buffer_address is mmc's global address
    of the blob; transport_endpoint names the local service holding it, "rank:<rank>" (mmc-metaserver's
    /get_all_segments lists them as "rank:<rank>@<host>")."""
    __slots__ = ("size", "buffer_address", "transport_endpoint")

    def __init__(self, size=0, buffer_address=0, transport_endpoint=""):
        self.size = size
        self.buffer_address = buffer_address
        self.transport_endpoint = transport_endpoint

    def __repr__(self):
        return "<Descriptor size=%d buffer_address=%d transport_endpoint=%s>" % (
            self.size, self.buffer_address, self.transport_endpoint)


class MemoryDescriptor:
    __slots__ = ("buffer_descriptor",)

    def __init__(self, buffer_descriptor):
        self.buffer_descriptor = buffer_descriptor


class DiskDescriptor:
    """An SSD replica: mmc keeps it in a local service's SSD tier file, named here "rank:<rank>"."""
    __slots__ = ("file_path", "object_size")

    def __init__(self, file_path, object_size):
        self.file_path = file_path
        self.object_size = object_size


class ReplicaDescriptor:
    """One replica of an object: memory (HBM or DRAM of a local service) or disk (its SSD tier). Every replica mmc
    reports is complete: objects being written are not listed."""
    __slots__ = ("status", "_mem", "_disk")

    def __init__(self, media, rank, size, gva):
        self.status = ReplicaStatus.COMPLETE
        where = "rank:%d" % rank
        self._mem = self._disk = None
        if media == MEDIA_SSD:
            self._disk = DiskDescriptor(where, size)
        else:
            self._mem = MemoryDescriptor(Descriptor(size, gva, where))

    def is_memory_replica(self):
        return self._mem is not None

    def is_disk_replica(self):
        return self._disk is not None

    def get_memory_descriptor(self):
        if self._mem is None:
            raise RuntimeError("not a memory replica")
        return self._mem

    def get_disk_descriptor(self):
        if self._disk is None:
            raise RuntimeError("not a disk replica")
        return self._disk

    def __repr__(self):
        return "<ReplicaDescriptor %s %s>" % ("memory" if self._mem else "disk",
                                              (self._mem.buffer_descriptor if self._mem else self._disk.file_path))


def replicas(info, n_max):
    """The replica descriptors of an mmc_key_info ([] when the key is absent)."""
    if not info.size:
        return []
    n = min(info.blob_num, n_max)
    return [ReplicaDescriptor(info.type[i], info.loc[i], info.size, info.gva[i]) for i in range(n)]
