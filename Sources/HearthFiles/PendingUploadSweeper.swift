import Logging
public import ServiceLifecycle

/// Expires uploads that were presigned but never completed: every `interval` it marks
/// `pending` files older than the policy's timeout `failed` and deletes their objects, in
/// bounded batches. A `Service` of the server's `ServiceGroup`; stops on graceful shutdown.
public struct PendingUploadSweeper: Service {
    let registry: FileRegistry
    let interval: Duration
    let batchSize: Int

    public init(registry: FileRegistry, interval: Duration, batchSize: Int = 100) {
        self.registry = registry
        self.interval = interval
        self.batchSize = batchSize
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    // Whole batches mean more may be waiting: continue at once.
                    while try await registry.expirePending(limit: batchSize) == batchSize, !Task.isCancelled {}
                } catch {
                    registry.logger.error("expiring unfinished uploads failed", metadata: ["error": "\(error)"])
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }
}
