/// Why the server could not start, with the exit status that fits (sysexits.h): each becomes
/// one line on stderr, never a stack of library messages.
public enum StartupError: Error, Equatable, CustomStringConvertible {
    /// Another process listens on the address (EX_UNAVAILABLE).
    case addressInUse(host: String, port: Int)
    /// The listening socket could not be opened for another reason (EX_OSERR).
    case cannotListen(host: String, port: Int, String)
    /// Another tetherd serves this data directory (EX_UNAVAILABLE).
    case dataDirectoryInUse(String, pid: Int32?)
    /// The data directory can't be created or used (EX_CANTCREAT).
    case dataDirectory(String, String)
    /// The database can't be opened or read (EX_IOERR).
    case storage(String)
    /// A setting names something unusable: a TLS file, a secret file (EX_CONFIG).
    case configuration(String)
    /// A setting that reads but does not fit this server (a room kind it does not have): a bad
    /// setting, as the loader's (EX_USAGE).
    case setting(String)
    /// No NATS server of the cluster answered (EX_UNAVAILABLE).
    case clusterUnreachable(String)
    /// A cluster stream or bucket can't be created: JetStream refused a setting (EX_CONFIG).
    case clusterStorage(String)

    public var exitCode: Int32 {
        switch self {
        case .addressInUse, .dataDirectoryInUse, .clusterUnreachable: return 69
        case .cannotListen: return 71
        case .dataDirectory: return 73
        case .storage: return 74
        case .setting: return 64
        case .configuration, .clusterStorage: return 78
        }
    }

    public var description: String {
        switch self {
        case .addressInUse(let host, let port):
            return "\(host):\(port) is already in use by another process; stop it or choose another --port"
        case .cannotListen(let host, let port, let reason):
            return "cannot listen on \(host):\(port): \(reason)"
        case .dataDirectoryInUse(let directory, let pid):
            let holder = pid.map { "another tetherd (pid \($0))" } ?? "another tetherd"
            return "data directory \(directory) is in use by \(holder); stop it or choose another --data"
        case .dataDirectory(let directory, let reason):
            return "cannot use data directory \(directory): \(reason)"
        case .storage(let reason):
            return "cannot open the database: \(reason)"
        case .configuration(let reason), .setting(let reason):
            return reason
        case .clusterUnreachable(let reason):
            return "cannot join the cluster: \(reason); start the NATS servers (JetStream on) or fix --nats"
        case .clusterStorage(let reason):
            return "cannot set up the cluster's storage: \(reason)"
        }
    }
}
