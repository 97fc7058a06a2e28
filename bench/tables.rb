# frozen_string_literal: true

# The drivers' Markdown tables (bench/run.rb, bench/quick.rb): primitives (ns and objects per call), structs and
# stacks (seconds per count, objects per operation), RPC (calls per second, objects per call), each with how many
# times faster thrift_native is than the newest C accelerator measured (or pure Ruby), and on a YJIT Ruby the same
# under YJIT; and the YJIT summary of a run.

require_relative "driver"

module Bench
  module_function

  def fmt_ns(row) = row ? format("%.1f", row["ns_per_call"]) : "n/a"
  def fmt_obj(row) = row ? format("%.3f", row["objects_per_call"]) : "n/a"

  # The comparisons a table shows, [label, ours, bases]: thrift_native against the first of `bases` measured (the
  # newest C, or pure Ruby), and on a YJIT Ruby thrift_native +YJIT against the same +YJIT and against pure Ruby +YJIT.
  def comparisons(impls, bases, label)
    ours = (%w[ours ours-master] & impls).first
    list = [["vs #{label}", ours, bases]]
    return list unless YJIT

    list << ["vs #{label} +YJIT", "#{ours}+yjit", bases.map { |b| "#{b}+yjit" }]
    pure = (%w[pure+yjit pure-master+yjit] & impls).first
    list << ["vs pure +YJIT", "#{ours}+yjit", [pure]] if pure && !bases.include?(pure.delete_suffix("+yjit"))
    list
  end

  # How many times faster `ours` is than the first of `bases` measured: base / ours for a time, ours / base for a rate.
  def ratio(by_impl, ours, bases, key, higher: false)
    base = by_impl.values_at(*bases).compact.first
    mine = by_impl[ours]
    return "n/a" unless base && mine

    format("%.2fx", higher ? mine[key] / base[key] : base[key] / mine[key])
  end

  # The accelerators whose objects per call a table shows: YJIT does not change what a call allocates.
  def counted(impls) = impls.reject { |i| i.end_with?("+yjit") }

  # results: { protocol => { op => { impl => row } } }
  def table(results, impls)
    versus = comparisons(impls, %w[c-master c], "C")
    header = ["protocol", "op", *impls.map { |i| "#{LABELS[i]} ns" }, *versus.map(&:first),
              *counted(impls).map { |i| "#{LABELS[i]} obj" }]
    rows = results.flat_map do |protocol, by_op|
      by_op.map do |op, by_impl|
        [protocol, op, *impls.map { |i| fmt_ns(by_impl[i]) },
         *versus.map { |_, ours, bases| ratio(by_impl, ours, bases, "ns_per_call") },
         *counted(impls).map { |i| fmt_obj(by_impl[i]) }]
      end
    end
    render(header, rows)
  end

  # results: { protocol => { op => { impl => row } } }
  # `versus`: what 'vs' compares thrift_native with, the first of them measured (the newest C, or pure Ruby).
  def struct_table(results, impls, versus: %w[c-master c])
    comps = comparisons(impls, versus, versus == %w[pure] ? "pure Ruby" : "C")
    header = ["protocol", "scenario", *impls.map { |i| "#{LABELS[i]} s" }, *comps.map(&:first),
              *counted(impls).map { |i| "#{LABELS[i]} obj/op" }]
    rows = results.flat_map do |protocol, by_op|
      by_op.map do |op, by_impl|
        any = by_impl.values.first
        label = "#{op} (#{any["count"]}x, #{any["bytes"]} B)"
        [protocol, label, *impls.map { |i| by_impl[i] ? format("%.4f", by_impl[i]["seconds"]) : "n/a" },
         *comps.map { |_, ours, bases| ratio(by_impl, ours, bases, "seconds") },
         *counted(impls).map { |i| by_impl[i] ? format("%.2f", by_impl[i]["objects_per_op"]) : "n/a" }]
      end
    end
    render(header, rows)
  end

  # results: { op => { impl => row } }; higher is better here, so 'vs C' is ours / C, for each library measured, and
  # 'vs floor' how many times the floor's time a call of ours takes (floor calls/s / ours; `floor: false` for a
  # table without one).
  def rpc_table(results, rpc_impls, floor: true)
    impls = rpc_impls + (floor ? ["floor"] : [])
    # Each library's thrift_native against its own C accelerator: the generated client differs between libraries.
    pairs = [%w[ours c], %w[ours-master c-master]].select { |o, c| rpc_impls.include?(o) && rpc_impls.include?(c) }
    pairs += pairs.map { |o, c| ["#{o}+yjit", "#{c}+yjit"] } if YJIT
    floors = floor ? pairs.map(&:first) : []
    header = ["call", *impls.map { |i| "#{LABELS[i]} calls/s" }, *pairs.map { |o, c| "#{LABELS[o]} vs #{LABELS[c]}" },
              *floors.map { |o| "#{LABELS[o]} vs floor" }, *counted(rpc_impls).map { |i| "#{LABELS[i]} obj/call" }]
    rows = results.map do |op, by_impl|
      [op, *impls.map { |i| by_impl[i] ? format("%.1f", by_impl[i]["calls_per_second"]) : "n/a" },
       *pairs.map { |o, c| ratio(by_impl, o, [c], "calls_per_second", higher: true) },
       *floors.map { |o| ratio(by_impl, o, ["floor"], "calls_per_second") },
       *counted(rpc_impls).map { |i| by_impl[i] ? format("%.1f", by_impl[i]["objects_per_call"]) : "n/a" }]
    end
    render(header, rows, 1)
  end

  # `left`: how many leading columns are labels (left-aligned).
  def render(header, rows, left = 2)
    widths = header.each_index.map { |i| ([header] + rows).map { |r| r[i].size }.max }
    line = ->(r) { "| " + r.each_with_index.map { |c, i| i < left ? c.ljust(widths[i]) : c.rjust(widths[i]) }.join(" | ") + " |" }
    [line.call(header), "|" + widths.map { |w| "-" * (w + 2) }.join("|") + "|", *rows.map(&line)].join("\n")
  end

  # On a YJIT Ruby: thrift_native +YJIT against C +YJIT and pure Ruby +YJIT on every row of the tables measured
  # (`measured`: [[name, { protocol => { op => { impl => row } } }, key], ...]), so that a row where YJIT closes the
  # gap shows.
  def yjit_summary(measured)
    ratios = measured.flat_map do |name, results, key|
      results.flat_map do |protocol, by_op|
        by_op.flat_map do |op, by_impl|
          ours = %w[ours+yjit ours-master+yjit].find { |i| by_impl[i] }
          next [] unless ours

          %w[c-master+yjit c+yjit pure+yjit pure-master+yjit].filter_map do |base|
            next unless by_impl[base]

            higher = key == "calls_per_second"
            r = higher ? by_impl[ours][key] / by_impl[base][key] : by_impl[base][key] / by_impl[ours][key]
            [r, "#{name} #{protocol} #{op}".squeeze(" "), LABELS[base]]
          end
        end
      end
    end
    behind = ratios.select { |r, *| r <= 1 }
    closest = ratios.min_by(3, &:first).map { |r, row, base| format("%s vs %s %.2fx", row, base, r) }
    puts "\nWith YJIT: thrift_native +YJIT ahead on #{ratios.size - behind.size} of #{ratios.size} comparisons with " \
         "C +YJIT and pure Ruby +YJIT; the closest: #{closest.join("; ")}"
    behind.each { |r, row, base| puts format("  behind: %s vs %s %.2fx", row, base, r) }
  end
end
