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

/// The Write stream: opened while batches are queued, a handshake (the database only), then one
/// `WriteRequest` per batch in queue order with up to ten in flight; each response acknowledges
/// the oldest. A permanent error after the handshake rejects the head batch and reopens at once;
/// anything else reopens with backoff and sends the queue again from its head.
struct RemoteWriteStream: Sendable {
    let firestore: Firestore
    let engine: LocalSyncEngine
    static let maxInFlight = 10

    static let permanentCodes: Set<RPCError.Code> = [
        .invalidArgument, .notFound, .alreadyExists, .permissionDenied, .failedPrecondition, .outOfRange, .unimplemented, .dataLoss,
    ]

    struct StreamState: Sendable {
        var handshaken = false
        var token = Data()
        var inFlight: [Int64] = []
        var lastSent: Int64 = 0
    }

    final class StreamBox: Sendable {
        let state = Mutex(StreamState())
    }

    func run() async {
        var backoff = StreamBackoff()
        var iterator = engine.wakes.makeAsyncIterator()
        while !Task.isCancelled {
            if !engine.networkEnabled || !engine.hasPendingBatches {
                guard await iterator.next() != nil else { return }
                continue
            }
            let stream = StreamBox()
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
                engine.reject(batchID: head, error: (FirestoreErrorCode(rawValue: rpc.code.rawValue) ?? .unknown).error(rpc.message))
                continue  // no backoff after a rejection
            }
            if let malformed = failure as? MalformedResponse, let head = s.inFlight.first {
                engine.reject(batchID: head, error: malformed.error)
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
                for batch in engine.pendingBatches(after: s.lastSent, limit: room) {
                    var request = Google_Firestore_V1_WriteRequest()
                    request.writes = batch.writes
                    // The token is the last one the server sent only when nothing is in flight.
                    if s.inFlight.isEmpty { request.streamToken = s.token }
                    s.inFlight.append(batch.batchID)
                    s.lastSent = batch.batchID
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
                let head: Int64? = try stream.state.withLock { s in
                    if !s.handshaken {
                        guard message.writeResults.isEmpty else { throw MalformedResponse("write results in the handshake response") }
                        s.handshaken = true
                        s.token = message.streamToken
                        return nil
                    }
                    guard let head = s.inFlight.first else { throw MalformedResponse("a write response with no write in flight") }
                    s.inFlight.removeFirst()
                    s.token = message.streamToken
                    return head
                }
                if let head {
                    try engine.acknowledge(batchID: head, results: message.writeResults, commitTime: message.commitTime)
                } else {
                    engine.setWritePump(pump)
                }
                pump()
            }
        }
    }
}
