package import Logging
import PostgresNIO
import ServiceLifecycle

/// One PostgreSQL channel listened to on a dedicated connection (a `LISTEN` holds its
/// connection, so it cannot be a pooled one): the base of the change feed across replicas
/// (docs/postgres.md, "Several replicas").
///
/// `handler` receives, one at a time and in order:
/// - ``Event/listening`` once `LISTEN` is in effect — at the start and after every reconnect.
///   Notifications sent while no connection listened are lost, so a consumer treats it as
///   "catch up from your own position" (read what it has not seen from the tables);
/// - ``Event/notification(_:)`` for each `NOTIFY` (or `pg_notify`) on the channel, in the order
///   PostgreSQL delivers them: a transaction's notifications only if it commits, transactions in
///   commit order. Identical notifications of one transaction are folded into one by PostgreSQL;
///   a payload is a wake-up, the tables are the truth.
///
/// A `Service` of the server's `ServiceGroup`: it runs until cancelled or a graceful shutdown,
/// and reconnects after any failure (the database down, the connection terminated), backing off
/// from ``initialRetryDelay`` to ``maximumRetryDelay``. It never throws.
package final class PostgresNotificationListener: Service, Sendable {
    package enum Event: Sendable, Equatable {
        case listening
        case notification(String)
    }

    let settings: PostgresSettings
    let channel: String
    let logger: Logger
    let handler: @Sendable (Event) async -> Void
    let initialRetryDelay: Duration
    let maximumRetryDelay: Duration

    package init(
        settings: PostgresSettings, channel: String, logger: Logger, initialRetryDelay: Duration = .milliseconds(100),
        maximumRetryDelay: Duration = .seconds(5), handler: @escaping @Sendable (Event) async -> Void
    ) {
        self.settings = settings
        self.channel = channel
        self.logger = logger
        self.initialRetryDelay = initialRetryDelay
        self.maximumRetryDelay = maximumRetryDelay
        self.handler = handler
    }

    package func run() async {
        await cancelWhenGracefulShutdown {
            var delay = self.initialRetryDelay
            while !Task.isCancelled {
                if await self.listenOnce() { delay = self.initialRetryDelay }
                do { try await Task.sleep(for: delay) } catch { return }
                delay = min(delay * 2, self.maximumRetryDelay)
            }
        }
    }

    /// One connection: connects, listens and hands events on until the connection ends or the
    /// task is cancelled. True if `LISTEN` took effect (the next failure retries at once).
    func listenOnce() async -> Bool {
        var listened = false
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: try settings.connectionConfiguration(), id: 0, logger: logger)
        } catch {
            if !Task.isCancelled {
                logger.warning("cannot connect to listen for notifications", metadata: ["channel": "\(channel)", "error": "\(Self.describe(error))"])
            }
            return false
        }
        do {
            // Cancellation closes the connection, which ends `listen` whatever it is doing:
            // postgres-nio's own handler loses a cancellation that arrives while LISTEN is being
            // registered, and the task would wait for notifications forever (an offline command
            // that never exited).
            try await withTaskCancellationHandler {
                try await connection.listen(on: channel) { notifications in
                    listened = true
                    await handler(.listening)
                    for try await notification in notifications {
                        await handler(.notification(notification.payload))
                    }
                }
            } onCancel: {
                connection.close().whenComplete { _ in }
            }
        } catch {
            if !Task.isCancelled {
                logger.warning("listening for notifications stopped", metadata: ["channel": "\(channel)", "error": "\(Self.describe(error))"])
            }
        }
        try? await connection.close()
        return listened
    }

    /// The server's message for a PostgreSQL error (never the password), else the error.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError { return PostgresBackendError.underlyingText(error) }
        return "\(error)"
    }
}
