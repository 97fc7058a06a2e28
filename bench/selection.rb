# frozen_string_literal: true

# What a benchmark child measures: everything, or (bench/quick.rb's `bin/bench`) fewer repetitions and only the
# measurements BENCH_ONLY names.
#   BENCH_QUICK=1          shorter counts and fewer repetitions within the child (each script says which)
#   BENCH_ONLY=a,b         only the measurements whose name starts with one of these (e.g. "small", "framed small",
#                          "tcp framed binary")
module Selection
  QUICK = ENV["BENCH_QUICK"] == "1"
  ONLY = ENV["BENCH_ONLY"]&.split(",")&.map(&:strip)&.freeze

  module_function

  # Whether the measurement `name` (or a group of them, whose names start with it) is wanted.
  def wanted?(name)
    ONLY.nil? || ONLY.any? { |only| name.start_with?(only) || only.start_with?(name) }
  end

  # `full` in a full run, `quick` under BENCH_QUICK=1.
  def pick(full, quick) = QUICK ? quick : full
end
