public import HearthCore
public import ServiceLifecycle

/// Runs ``LifecycleWorker`` passes in `hearth serve`: whole batches mean more may be waiting,
/// so passes repeat at once until one finds less than a batch; then it waits `intervalSeconds`.
/// Beside the passes it runs the `onAccountDeletion` rules for each batch of uids the auth
/// engine reports deleted (`accountDeletions`, the hook); the passes' reconciliation stays as
/// the safety net (deletions made while the server was down, or by another process).
/// A `Service` of the server's `ServiceGroup`; stops on graceful shutdown.
///
/// Servers sharing a database run the passes on one of them at a time (`jobs`, job
/// "lifecycle"); the account-deletion hook runs on the server whose engine deleted the
/// accounts, once per deletion.
public struct LifecycleService: Service {
    let worker: LifecycleWorker
    let accountDeletions: AsyncStream<[String]>?
    let jobs: any JobCoordinator

    /// The passes' job name for ``JobCoordinator``.
    public static let job = "lifecycle"

    public init(worker: LifecycleWorker, accountDeletions: AsyncStream<[String]>? = nil, jobs: any JobCoordinator = LocalJobCoordinator()) {
        self.worker = worker
        self.accountDeletions = accountDeletions
        self.jobs = jobs
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if let accountDeletions {
                    group.addTask {
                        for await uids in accountDeletions {
                            do {
                                try await worker.accountsDeleted(uids)
                            } catch {
                                worker.logger.error("lifecycle account deletion failed", metadata: ["error": "\(error)", "uids": "\(uids.count)"])
                            }
                        }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        do {
                            _ = try await jobs.runExclusively(job: Self.job) {
                                while !Task.isCancelled, try await worker.pass(dryRun: false).total > 0 {}
                            }
                        } catch {
                            worker.logger.error("lifecycle pass failed", metadata: ["error": "\(error)"])
                        }
                        do { try await Task.sleep(for: .seconds(worker.rules.intervalSeconds)) } catch { return }
                    }
                }
            }
        }
    }
}
