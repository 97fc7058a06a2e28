# frozen_string_literal: true

require "open3"
require "rbconfig"

# spec/support/struct_runner.rb in a child Ruby (one accelerator per process, as only one can be loaded): its
# arguments, the Marshal-dumped input on stdin, the Marshal-loaded answer back. A child that fails or crashes raises.
module StructRuns
  SCRIPT = File.expand_path("struct_runner.rb", __dir__)

  module_function

  def run(accelerator, protocol, *args, input: nil, dispatch: false)
    env = { "PROTOCOL" => protocol, "DISPATCH" => (dispatch ? "1" : nil) }
    out, err, status = Open3.capture3(env, RbConfig.ruby, SCRIPT, accelerator, *args.map(&:to_s),
                                      stdin_data: input.nil? ? "" : Marshal.dump(input), binmode: true)
    unless status.success?
      raise "struct runner (#{accelerator} #{protocol} #{args.join(" ")}) crashed or failed (#{status}): #{err}"
    end

    Marshal.load(out)
  end
end
