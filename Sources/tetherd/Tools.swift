import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TetherDemos
import TetherServer
import UnixSignals

struct MintToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print an HS256 access token for one of the daemon's secrets.",
        discussion: """
            Examples:
              tetherd token --secret s3cret --subject alice --rooms 'todo:*,counter' --ttl 3600
              tetherd token --secrets-file /etc/tether/secrets.yaml --kid 2026-04 --rooms '*'
              tetherd token --secret s3cret --subject ops --rooms '*' --admin
              tetherd token --secret s3cret --subject service:reports --read 'dashboard:*' --aud tether
            With --kid the token's header names that key; the daemon checks it with the secret of that name \
            (auth-secrets-file). Without, it checks it with its unnamed secret (auth-secret, auth-secret-file). \
            With --admin the token also opens the server's overview room tether.server (the dashboard at /). \
            --rooms may join and act, --read only join and watch.
            """,
        helpNames: [.long, .short])  // the root has none (serve answers --help)

    @Option(help: "The secret itself (visible in ps; prefer a file).")
    var secret: String?

    @Option(help: "A file holding the secret (as auth-secret-file).")
    var secretFile: String?

    @Option(help: "A file of kid: secret lines (as auth-secrets-file); --kid picks the secret.")
    var secretsFile: String?

    @Option(help: "The key name (kid) to put in the token's header.")
    var kid: String?

    @Option(help: "Who the token is for (the sub claim).")
    var subject = "local"

    @Option(help: "Comma-separated room patterns it may join and act on: a name, or a prefix ending in * (todo:*, *).")
    var rooms: String?

    @Option(help: "Comma-separated room patterns it may only join and watch (the read claim), not act on.")
    var read: String?

    @Option(parsing: .unconditional, help: "Seconds from now before which the token is not valid (the nbf claim); 0 or negative for a time in the past.")
    var nbf: Int?

    @Option(help: "The issuer to name (the iss claim).")
    var iss: String?

    @Option(help: "The audience to name (the aud claim).")
    var aud: String?

    // Unconditional: "--ttl -5" is a (refused) number, not a missing value followed by an option.
    @Option(parsing: .unconditional, help: "Seconds until the token expires (at least 1).")
    var ttl = 3600

    @Flag(help: "Also open the server's overview room tether.server (the dashboard's figures and room list).")
    var admin = false

    func validate() throws {
        guard [secret, secretFile, secretsFile].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give one of --secret, --secret-file, --secrets-file")
        }
        if secretsFile != nil, kid == nil { throw ValidationError("--secrets-file needs --kid to pick the secret") }
        guard rooms != nil || read != nil else { throw ValidationError("give --rooms or --read (or both): the rooms the token opens") }
        guard ttl > 0 else { throw ValidationError("--ttl must be a positive number of seconds, not \(ttl): that token would be expired when printed") }
    }

    func run() async throws {
        let authority: TokenAuthority
        do {
            if let secretsFile {
                authority = TokenAuthority(secret: nil, named: try TokenSecretsFile.read(secretsFile))
            } else {
                // Read as the daemon reads auth-secret / auth-secret-file.
                let arguments = secret.map { ["--auth-secret", $0] } ?? ["--auth-secret-file", secretFile!]
                let unnamed = try ConfigurationLoader().load(arguments: arguments, environment: [:]).configuration.auth!
                authority = kid.map { unnamed.namingUnnamedSecret($0) } ?? unnamed
            }
        } catch {
            throw ValidationError(error.description)
        }
        let now = Int(Date().timeIntervalSince1970)
        let patterns = { (list: String?) in (list ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
        let claims = AccessClaims(
            subject: subject, expires: now + ttl, rooms: patterns(rooms), read: patterns(read), admin: admin,
            notBefore: nbf.map { now + $0 }, issuedAt: now, issuer: iss, audience: aud.map { [$0] } ?? [])
        guard let token = await authority.mint(claims, kid: kid) else {
            throw ValidationError("\(secretsFile ?? "the secrets file") has no secret named \(kid ?? "")")
        }
        print(token)
    }
}

/// Where `backup` and `restore` find the data directory: --data, or the config's `data`.
struct DataDirectoryOptions: ParsableArguments {
    @Option(help: "The data directory.")
    var data: String?

    @Option(help: "A config file whose data setting names the data directory (the TETHERD_ environment applies too).")
    var config: String?

    func directory() throws -> String {
        if let data { return data }
        let arguments = config.map { ["--" + ConfigurationLoader.configFileKey, $0] } ?? []
        do {
            let loaded = try ConfigurationLoader(programOptions: Tetherd.programOptions)
                .load(arguments: arguments, environment: ProcessInfo.processInfo.environment)
            guard let directory = loaded.configuration.dataDirectory else { throw ValidationError("the settings keep rooms in memory only: no data directory") }
            return directory
        } catch let error as ConfigurationError {
            throw ValidationError(error.description)
        }
    }
}

/// `tetherd backup`: a consistent copy of a live database.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the data directory's database to a file, consistently, while the daemon runs and writes.",
        discussion: """
            Uses SQLite's online backup API from a read-only connection; it does not need the daemon's lock. \
            Every change acknowledged before the copy began is in it. The file is readable by its owner only \
            (mode 0600): it holds every room's state. Run it as the daemon's user \
            (sudo -u tether tetherd backup --config /etc/tether/tetherd.yaml /var/backups/tether.sqlite).

            Exit status: \(DatabaseBackup.Failure.exitStatusHelp)
            """,
        helpNames: [.long, .short])  // the root has none (serve answers --help)

    @OptionGroup var location: DataDirectoryOptions

    @Argument(help: "The backup file to write (replaced if it exists).")
    var file: String

    func run() async throws {
        let directory = try location.directory()
        do {
            let summary = try DatabaseBackup.backup(dataDirectory: directory, to: file)
            print("tetherd backup: \(file): \(summary)")
        } catch {
            Tetherd.fail("backup: \(error)", exitCode: error.exitCode)
        }
    }
}

/// `tetherd restore`: a backup back into place.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Check a backup (every room loads) and make it the data directory's database.",
        discussion: """
            The daemon must be stopped (the data directory's lock is taken). Rooms come back with their epoch \
            and version, so clients resuming from the backup's versions get patches. With --replace an \
            existing database is moved aside as tether.sqlite.replaced-TIME, never deleted.

            Exit status: \(DatabaseBackup.Failure.exitStatusHelp)
            """,
        helpNames: [.long, .short])  // the root has none (serve answers --help)

    @OptionGroup var location: DataDirectoryOptions

    @Flag(help: "Move an existing database aside instead of refusing.")
    var replace = false

    @Argument(help: "The backup file (from tetherd backup).")
    var file: String

    func run() async throws {
        let directory = try location.directory()
        do {
            let summary = try DatabaseBackup.restore(from: file, into: directory, replace: replace)
            print("tetherd restore: \(directory): \(summary)")
        } catch {
            Tetherd.fail("restore: \(error)", exitCode: error.exitCode)
        }
    }
}
