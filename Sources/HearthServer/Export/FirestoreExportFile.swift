package import Foundation

/// Writes a Firestore emulator export folder (`<directory>/`: `<name>.overall_export_metadata`,
/// `all_namespaces/all_kinds/all_namespaces_all_kinds.export_metadata` and `output-0`) one
/// document at a time: the output file is written a megabyte at a time, never held whole.
package struct FirestoreExportFile: Sendable {
    let directory: URL
    let name: String
    let output: URL
    var writer = FirestoreExportFormat.LogWriter()
    /// The output file's descriptor (-1 once finished).
    var descriptor: Int32
    package private(set) var count = 0

    package init(directory: URL, name: String) throws {
        self.directory = directory
        self.name = name
        let kindsDir = directory.appendingPathComponent("all_namespaces/all_kinds")
        try FileManager.default.createDirectory(at: kindsDir, withIntermediateDirectories: true)
        output = kindsDir.appendingPathComponent("output-0")
        descriptor = open(output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else {
            throw EmulatorExport.Failure("cannot write \(output.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Appends one document of `project`.
    package mutating func append(_ entity: FirestoreExportFormat.Entity, project: String) throws {
        writer.append(FirestoreExportFormat.record(entity, project: project))
        count += 1
        if writer.bytes.count >= 1 << 20 { try flush() }
    }

    mutating func flush() throws {
        let bytes = writer.take()
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + done, $0.count - done) }
            guard n > 0 else {
                let reason = String(cString: strerror(errno))
                _ = close(descriptor)
                throw EmulatorExport.Failure("cannot write \(output.path): \(reason)")
            }
            done += n
        }
    }

    /// Writes the rest of the output and the two metadata files; the number of documents.
    package mutating func finish() throws -> Int {
        try flush()
        _ = close(descriptor)
        descriptor = -1
        let micros = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let kindsDir = output.deletingLastPathComponent()
        try Data(FirestoreExportFormat.kindsMetadata(name: name, micros: micros, outputs: ["output-0"]))
            .write(to: kindsDir.appendingPathComponent("all_namespaces_all_kinds.export_metadata"))
        try Data(FirestoreExportFormat.overallMetadata(documents: count, outputBytes: writer.count))
            .write(to: directory.appendingPathComponent("\(name).overall_export_metadata"))
        return count
    }
}
