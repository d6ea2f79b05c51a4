public import Foundation
import Synchronization

public enum StorageTaskStatus: Int, Sendable {
    case unknown, resume, progress, pause, success, failure
}

public struct StorageTaskSnapshot: Sendable {
    public let reference: StorageReference
    public let status: StorageTaskStatus
    /// Bytes sent so far out of the total.
    public let progress: Progress?
    public let metadata: StorageMetadata?
    public let error: (any Error)?
}

/// A running upload: observe its progress and outcome, or cancel it.
public final class StorageUploadTask: Sendable {
    public let reference: StorageReference
    struct State {
        var observers: [String: (StorageTaskStatus, @Sendable (StorageTaskSnapshot) -> Void)] = [:]
        var last: StorageTaskSnapshot?
        var work: Task<Void, Never>?
    }
    let state = Mutex(State())

    init(reference: StorageReference) { self.reference = reference }

    @discardableResult
    public func observe(_ status: StorageTaskStatus, handler: @escaping @Sendable (StorageTaskSnapshot) -> Void) -> String {
        let handle = UUID().uuidString
        let last = state.withLock { s -> StorageTaskSnapshot? in
            s.observers[handle] = (status, handler)
            return s.last
        }
        if let last, last.status == status, status == .success || status == .failure { handler(last) }
        return handle
    }

    public func removeObserver(withHandle handle: String) {
        _ = state.withLock { $0.observers.removeValue(forKey: handle) }
    }

    public func removeAllObservers() { state.withLock { $0.observers = [:] } }

    public func cancel() { state.withLock { $0.work }?.cancel() }

    public var snapshot: StorageTaskSnapshot {
        state.withLock { $0.last } ?? StorageTaskSnapshot(reference: reference, status: .unknown, progress: nil, metadata: nil, error: nil)
    }

    func start(
        completion: (@Sendable (StorageMetadata?, (any Error)?) -> Void)?,
        _ work: @escaping @Sendable (@escaping @Sendable (Int64, Int64) -> Void) async throws -> StorageMetadata
    ) {
        let task = Task {
            do {
                let meta = try await work { done, total in
                    let p = Progress(totalUnitCount: total)
                    p.completedUnitCount = done
                    self.emit(StorageTaskSnapshot(reference: self.reference, status: .progress, progress: p, metadata: nil, error: nil))
                }
                emit(StorageTaskSnapshot(reference: reference, status: .success, progress: nil, metadata: meta, error: nil))
                completion?(meta, nil)
            } catch {
                let failure: any Error = error is CancellationError
                    ? StorageErrorCode.cancelled.error("User cancelled the upload/download.") : error
                emit(StorageTaskSnapshot(reference: reference, status: .failure, progress: nil, metadata: nil, error: failure))
                completion?(nil, failure)
            }
        }
        state.withLock { $0.work = task }
    }

    func emit(_ snapshot: StorageTaskSnapshot) {
        let handlers = state.withLock { s in
            s.last = snapshot
            return s.observers.values.filter { $0.0 == snapshot.status }.map(\.1)
        }
        for h in handlers { h(snapshot) }
    }
}
