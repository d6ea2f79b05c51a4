import Foundation
import HearthCore
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HearthStorage

/// A filesystem blob store whose deletions wait until the test opens its gate.
final class GatedBlobStore: BlobStore {
    let inner: any BlobStore
    private let gate = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    init(_ inner: any BlobStore) { self.inner = inner }

    func open() {
        let waiting = gate.withLock { gate in
            gate.open = true
            defer { gate.waiting = [] }
            return gate.waiting
        }
        for waiter in waiting { waiter.resume() }
    }

    private func waitForTheGate() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = gate.withLock { gate in
                if !gate.open { gate.waiting.append(continuation) }
                return gate.open
            }
            if open { continuation.resume() }
        }
    }

    func makeWriter() throws(HearthError) -> any BlobWriter { try inner.makeWriter() }
    func read(_ id: String, range: Range<Int64>?, chunkSize: Int) -> AsyncThrowingStream<[UInt8], any Error> {
        inner.read(id, range: range, chunkSize: chunkSize)
    }
    func readAll(_ id: String, range: Range<Int64>) async throws -> [UInt8] { try await inner.readAll(id, range: range) }
    func delete(_ id: String) async throws {
        await waitForTheGate()
        try await inner.delete(id)
    }
    func delete(batch ids: [String]) async throws {
        await waitForTheGate()
        try await inner.delete(batch: ids)
    }
    func allBlobIDs() async throws -> [String] { try await inner.allBlobIDs() }
}

/// The blob reclaimer as a `Service` of a `ServiceGroup`: deletions leave the write's path while
/// it runs, graceful shutdown deletes what is queued before the service returns, and without a
/// running service the write deletes before it returns.
@Suite struct BlobReclaimerServiceTests {
    @Test func deletionsQueuedBeforeGracefulShutdownAreDoneBeforeTheServiceReturns() async throws {
        let t = try TempStore(metadata: .sqlite)
        let gated = GatedBlobStore(t.blobs)
        let store = ObjectStore(metadata: t.store.metadata, blobs: gated)
        try await store.createBucket("b-1")
        _ = try await store.put("b-1", "a", Array("first".utf8))
        _ = try await store.put("b-1", "b", Array("second".utf8))
        #expect(t.files("blobs").count == 2)

        let group = ServiceGroup(configuration: .init(services: [store.reclaimer], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            while !store.reclaimer.isRunning { try await Task.sleep(for: .milliseconds(5)) }
            // The gate is shut: the delete answers at once, its bytes wait for the service.
            try await store.delete("b-1", "a")
            #expect(t.files("blobs").count == 2)
            await group.triggerGracefulShutdown()
            // The deletion still waits at the gate, yet the service stops taking ids.
            let deadline = ContinuousClock.now + .seconds(10)
            while store.reclaimer.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(store.reclaimer.isRunning == false, "no more ids taken once shutdown starts")
            gated.open()
            try await tasks.next()
        }
        #expect(t.files("blobs").count == 1, "the queued deletion was done before the service returned")
        await store.settleReclaims()

        // No service running: the delete removes the bytes before it returns.
        try await store.delete("b-1", "b")
        #expect(t.files("blobs").isEmpty)
    }

    @Test func aSecondRunOfTheSameReclaimerIsRefused() async throws {
        let t = try TempStore(metadata: .memory)
        let group = ServiceGroup(configuration: .init(services: [t.store.reclaimer], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            while !t.store.reclaimer.isRunning { try await Task.sleep(for: .milliseconds(5)) }
            await #expect(throws: HearthError.self) { try await t.store.reclaimer.run() }
            await group.triggerGracefulShutdown()
            try await tasks.next()
        }
        #expect(t.store.reclaimer.isRunning == false)
    }
}
