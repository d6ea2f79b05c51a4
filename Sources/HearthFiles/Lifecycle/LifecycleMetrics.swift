import Synchronization

/// What the lifecycle worker has deleted since the server started, by kind (the api port's
/// `/metrics` publishes it as `hearth_lifecycle_deleted_total`).
public final class LifecycleMetrics: Sendable {
    private let totals = Mutex(LifecycleWorker.Counts())

    public init() {}

    func add(_ counts: LifecycleWorker.Counts) {
        totals.withLock { total in
            total.documents += counts.documents
            total.objects += counts.objects
            total.databasePaths += counts.databasePaths
        }
    }

    public var snapshot: LifecycleWorker.Counts { totals.withLock { $0 } }
}
