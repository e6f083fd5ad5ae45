// Hooks of the collectives and of Send/Recv (declared by nccl_hooks.def).
#include "nccl/call_recording.h"
#include "nccl/hooks.h"

namespace ncclwatch::shim {

using format::Func;

ncclResult_t hookAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return record_call({Func::kAllReduce, comm, count, datatype, op, -1, stream}, [&] {
    return realAllReduce()(sendbuff, recvbuff, count, datatype, op, comm, stream);
  });
}

ncclResult_t hookBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return record_call({Func::kBroadcast, comm, count, datatype, -1, root, stream}, [&] {
    return realBroadcast()(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

ncclResult_t hookBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return record_call({Func::kBcast, comm, count, datatype, -1, root, stream},
                     [&] { return realBcast()(buff, count, datatype, root, comm, stream); });
}

ncclResult_t hookReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return record_call({Func::kReduce, comm, count, datatype, op, root, stream}, [&] {
    return realReduce()(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  });
}

ncclResult_t hookAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return record_call({Func::kAllGather, comm, sendcount, datatype, -1, -1, stream}, [&] {
    return realAllGather()(sendbuff, recvbuff, sendcount, datatype, comm, stream);
  });
}

ncclResult_t hookReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return record_call({Func::kReduceScatter, comm, recvcount, datatype, op, -1, stream}, [&] {
    return realReduceScatter()(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  });
}

ncclResult_t hookAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return record_call({Func::kAlltoAll, comm, count, datatype, -1, -1, stream}, [&] {
    return realAlltoAll()(sendbuff, recvbuff, count, datatype, comm, stream);
  });
}

ncclResult_t hookGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return record_call({Func::kGather, comm, count, datatype, -1, root, stream}, [&] {
    return realGather()(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

ncclResult_t hookScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return record_call({Func::kScatter, comm, count, datatype, -1, root, stream}, [&] {
    return realScatter()(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

ncclResult_t hookSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return record_call({Func::kSend, comm, count, datatype, -1, peer, stream},
                     [&] { return realSend()(sendbuff, count, datatype, peer, comm, stream); });
}

ncclResult_t hookRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return record_call({Func::kRecv, comm, count, datatype, -1, peer, stream},
                     [&] { return realRecv()(recvbuff, count, datatype, peer, comm, stream); });
}

}  // namespace ncclwatch::shim
