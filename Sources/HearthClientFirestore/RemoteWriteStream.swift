import Foundation
import GRPCCore
import HearthFirestoreProto
import SwiftProtobuf
import Synchronization

/// Exponential backoff for the streams, as the Apple SDK's: 1 s × 1.5 up to 60 s, ±50% jitter;
/// `RESOURCE_EXHAUSTED` jumps to the maximum; a good response resets it.
struct StreamBackoff: Sendable {
    static let initial = 1.0
    static let factor = 1.5
    static let maximum = 60.0
    var current = 0.0

    /// The next delay in seconds (0 for the first attempt after a reset).
    mutating func next(resourceExhausted: Bool = false) -> Double {
        if resourceExhausted { current = Self.maximum }
        let delay = current * Double.random(in: 0.5...1.5)
        current = current == 0 ? Self.initial : min(current * Self.factor, Self.maximum)
        if resourceExhausted { current = Self.maximum }
        return delay
    }

    mutating func reset() { current = 0 }
}

/// The Write stream: opened while batches are queued, a handshake (the database only), then
/// `WriteRequest`s in queue order with up to ten in flight; each response acknowledges the oldest.
/// A request carries consecutive batches together (up to 500 writes, never two writes to one
/// document), so a queue built offline drains in a few commits rather than one per batch; the
/// response's results are split back per batch. A permanent error after the handshake rejects the
/// head batch when it went alone; when it went with others the stream reopens at once and sends
/// those batches one per request, so that only the batch at fault is rejected. Anything else
/// reopens with backoff and sends the queue again from its head.
struct RemoteWriteStream: Sendable {
    let firestore: Firestore
    let engine: LocalSyncEngine
    static let maxInFlight = 10
    /// Firestore's limit of writes in one commit.
    static let maxWritesPerRequest = 500

    /// Consecutive batches for one request: at least the first; then more while they fit in
    /// `maxWrites` and touch no document already in the request. `alone` batches go by themselves.
    static func group(_ batches: [LocalCache.Batch], maxWrites: Int = maxWritesPerRequest, alone: (Int64) -> Bool = { _ in false })
        -> [LocalCache.Batch]
    {
        guard let first = batches.first else { return [] }
        var out = [first]
        if alone(first.batchID) { return out }
        var count = first.writes.count
        var targets = Set(first.writes.map(LocalSyncEngine.target(of:)))
        guard targets.count == count else { return out }  // it writes a document twice: alone
        for batch in batches.dropFirst() {
            let names = batch.writes.map(LocalSyncEngine.target(of:))
            guard !alone(batch.batchID), count + names.count <= maxWrites, targets.isDisjoint(with: names), Set(names).count == names.count else { break }
            out.append(batch)
            count += names.count
            targets.formUnion(names)
        }
        return out
    }

    static let permanentCodes: Set<RPCError.Code> = [
        .invalidArgument, .notFound, .alreadyExists, .permissionDenied, .failedPrecondition, .outOfRange, .unimplemented, .dataLoss,
    ]

    struct StreamState: Sendable {
        var handshaken = false
        var token = Data()
        /// Per request in flight: its batches and how many writes each has.
        var inFlight: [[(batchID: Int64, writes: Int)]] = []
        var lastSent: Int64 = 0
        /// Batches up to this id go one per request (after a shared request was refused).
        var aloneThrough: Int64 = 0
    }

    final class StreamBox: Sendable {
        let state: Mutex<StreamState>
        init(aloneThrough: Int64) {
            var s = StreamState()
            s.aloneThrough = aloneThrough
            state = Mutex(s)
        }
    }

    func run() async {
        var backoff = StreamBackoff()
        var aloneThrough: Int64 = 0
        var iterator = engine.wakes.makeAsyncIterator()
        while !Task.isCancelled {
            if !engine.networkEnabled || !engine.hasPendingBatches {
                guard await iterator.next() != nil else { return }
                continue
            }
            let stream = StreamBox(aloneThrough: aloneThrough)
            var failure: (any Error)?
            do {
                try await open(stream)
            } catch is CancellationError {
                engine.setWritePump(nil)
                return
            } catch {
                failure = error
            }
            engine.setWritePump(nil)
            if Task.isCancelled { return }
            let s = stream.state.withLock { $0 }
            if s.handshaken { backoff.reset() }
            if let rpc = failure as? RPCError, s.handshaken, Self.permanentCodes.contains(rpc.code), let head = s.inFlight.first {
                if head.count > 1 {
                    // Refused with others: send them one by one to find the batch at fault.
                    aloneThrough = head.last!.batchID
                    continue
                }
                engine.reject(batchID: head[0].batchID, error: (FirestoreErrorCode(rawValue: rpc.code.rawValue) ?? .unknown).error(rpc.message))
                continue  // no backoff after a rejection
            }
            if let malformed = failure as? MalformedResponse, let head = s.inFlight.first {
                for batch in head { engine.reject(batchID: batch.batchID, error: malformed.error) }
            }
            let delay = backoff.next(resourceExhausted: (failure as? RPCError)?.code == .resourceExhausted)
            if delay > 0 {
                do { try await Task.sleep(for: .seconds(delay)) } catch { return }
            }
        }
    }

    /// One stream, until the server ends it or it fails.
    func open(_ stream: StreamBox) async throws {
        let metadata = try await firestore.metadata()
        let stub = try firestore.stub()
        let (requests, requestSink) = AsyncStream.makeStream(of: Google_Firestore_V1_WriteRequest.self)
        defer { requestSink.finish() }
        var handshake = Google_Firestore_V1_WriteRequest()
        handshake.database = firestore.databaseName
        requestSink.yield(handshake)
        engine.setCloseWriteStream { requestSink.finish() }
        defer { engine.setCloseWriteStream(nil) }
        let engine = engine
        let pump: @Sendable () -> Void = {
            stream.state.withLock { s in
                guard s.handshaken else { return }
                let room = Self.maxInFlight - s.inFlight.count
                guard room > 0 else { return }
                var pending = engine.pendingBatches(after: s.lastSent, limit: room * Self.maxWritesPerRequest)[...]
                for _ in 0..<room {
                    let aloneThrough = s.aloneThrough
                    let group = Self.group(Array(pending.prefix(Self.maxWritesPerRequest))) { $0 <= aloneThrough }
                    guard let last = group.last else { break }
                    pending = pending.dropFirst(group.count)
                    var request = Google_Firestore_V1_WriteRequest()
                    request.writes = group.flatMap(\.writes)
                    // The token is the last one the server sent only when nothing is in flight.
                    if s.inFlight.isEmpty { request.streamToken = s.token }
                    s.inFlight.append(group.map { ($0.batchID, $0.writes.count) })
                    s.lastSent = last.batchID
                    requestSink.yield(request)
                }
            }
        }
        try await stub.write(
            request: StreamingClientRequest(metadata: metadata) { writer in
                for await request in requests { try await writer.write(request) }
            },
            options: .defaults
        ) { response in
            for try await message in response.messages {
                let head: [(batchID: Int64, writes: Int)]? = try stream.state.withLock { s in
                    if !s.handshaken {
                        guard message.writeResults.isEmpty else { throw MalformedResponse("write results in the handshake response") }
                        s.handshaken = true
                        s.token = message.streamToken
                        return nil
                    }
                    // It leaves the in-flight list once acknowledged (a malformed answer rejects it).
                    guard let head = s.inFlight.first else { throw MalformedResponse("a write response with no write in flight") }
                    s.token = message.streamToken
                    return head
                }
                if let head {
                    guard message.writeResults.count == head.reduce(0, { $0 + $1.writes }) else {
                        throw MalformedResponse("\(message.writeResults.count) write results for \(head.reduce(0, { $0 + $1.writes })) writes")
                    }
                    var offset = 0
                    for batch in head {
                        let results = Array(message.writeResults[offset..<offset + batch.writes])
                        offset += batch.writes
                        try engine.acknowledge(batchID: batch.batchID, results: results, commitTime: message.commitTime)
                    }
                    stream.state.withLock { _ = $0.inFlight.removeFirst() }
                } else {
                    engine.setWritePump(pump)
                }
                pump()
            }
        }
    }
}
