/// The config file `tetherd sample-config` prints (and the Debian package installs as
/// /etc/tether/tetherd.yaml): every setting of `ServerConfiguration.options` with its help, its
/// environment name and its default, commented out. Settings given to it are written
/// uncommented. Generated from the option table, so it can't drift from the code.
public enum SampleConfiguration {
    /// `settings`: option keys and values to write uncommented (checked by the caller).
    public static func text(settings: [String: String] = [:], options: [ConfigurationOption] = ServerConfiguration.options,
                            defaults: ServerConfiguration = ServerConfiguration()) -> String {
        var lines = [
            "# tetherd configuration (YAML; JSON works too).",
            "#",
            "# Every setting is listed with its default, commented out: uncomment a line and change it to",
            "# set it. Command-line flags (--KEY) and TETHERD_* environment variables override this file.",
            "# Settings marked (reloadable) change on `systemctl reload tetherd` (SIGHUP) without dropping",
            "# clients; the others need a restart. Check a change first: tetherd check --config FILE.",
            "# See `tetherd --help` and /usr/share/doc/tether/OPERATIONS.md.",
        ]
        for option in options where !option.isHidden {
            lines.append("")
            var help = option.help
            if option.isReloadable { help += " (reloadable)" }
            help += " [\(option.environmentName)]"
            lines += wrap(help, width: 98).map { "# " + $0 }
            let scalar = { (value: String) in option.isFlag ? value : yamlScalar(value) }
            let fallback = option.value(in: defaults)
            if let value = settings[option.key] {
                if let fallback, !option.isSecret, fallback != value { lines.append("# default: \(scalar(fallback))") }
                lines.append("\(option.key): \(scalar(value))")
            } else {
                let shown = option.isSecret ? nil : fallback
                lines.append("# \(option.key): \(shown.map(scalar) ?? "<\(option.valueName ?? "value")>")")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A YAML plain scalar when that reads back as the same text, else double-quoted.
    static func yamlScalar(_ text: String) -> String {
        let plain = !text.isEmpty && text.allSatisfy { $0.isLetter || $0.isNumber || "._/-+".contains($0) }
            && !["true", "false", "yes", "no", "on", "off", "null", "~"].contains(text.lowercased())
        if plain { return text }
        let escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "\"\(escaped)\""
    }

    private static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}

extension SampleConfiguration {
    /// The sample for `tetherd sample-config --KEY VALUE ...`: the given settings are checked
    /// as `tetherd` would read them (flags only) and written uncommented.
    public static func text(arguments: [String]) throws(ConfigurationError) -> String {
        let loader = ConfigurationLoader()
        _ = try loader.load(arguments: arguments, environment: [:])
        return text(settings: try loader.checkArguments(arguments))
    }
}
