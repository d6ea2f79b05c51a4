import Synchronization
import CoreMetrics

/// What the lifecycle worker has deleted since the server started, by kind (also counted as
/// `hearth_lifecycle_deleted_total{kind}` in the metrics registry the `/metrics` endpoints publish).
public final class LifecycleMetrics: Sendable {
    private let totals = Mutex(LifecycleWorker.Counts())

    private let counters = (
        document: Counter(label: "hearth_lifecycle_deleted_total", dimensions: [("kind", "document")]),
        object: Counter(label: "hearth_lifecycle_deleted_total", dimensions: [("kind", "object")]),
        database: Counter(label: "hearth_lifecycle_deleted_total", dimensions: [("kind", "database")])
    )

    public init() {}

    func add(_ counts: LifecycleWorker.Counts) {
        totals.withLock { total in
            total.documents += counts.documents
            total.objects += counts.objects
            total.databasePaths += counts.databasePaths
        }
        counters.document.increment(by: counts.documents)
        counters.object.increment(by: counts.objects)
        counters.database.increment(by: counts.databasePaths)
    }

    public var snapshot: LifecycleWorker.Counts { totals.withLock { $0 } }
}
