# frozen_string_literal: true

require "open3"
require "tmpdir"
require "fileutils"

# Builds the gem, installs it offline into a scratch GEM_HOME (which compiles the extension with cargo, as
# `gem install` does for a user) and loads it from there. Slow (a release build): about a minute.
RSpec.describe "The packaged gem" do
  root = SpecSupport::ROOT

  it "packages neither build outputs nor the fuzz crate, whatever lies in the work tree" do
    files = Gem::Specification.load(File.join(root, "thrift_native.gemspec")).files
    expect(files).to include("ext/thrift_native_core/src/compact.rs", "ext/thrift_native/src/lib.rs", "Cargo.lock",
                             "ext/thrift_native/cargo_library.rb", "LICENSE")
    expect(files.grep(%r{(\A|/)(target|fuzz)/})).to eq([])
  end

  it "declares the license its LICENSE file holds" do
    spec = Gem::Specification.load(File.join(root, "thrift_native.gemspec"))
    expect(spec.license).to eq("Apache-2.0")
    expect(File.read(File.join(root, "LICENSE"))).to include("Apache License", "Version 2.0, January 2004")
  end

  it "builds, installs offline without cargo's target directory, and loads from the installed gem" do
    # bin/matrix sets this in the cells whose Ruby another cell's gem build covers (CI's time: a release build each).
    skip ENV["THRIFT_NATIVE_SKIP_SOURCE_GEM"] if ENV["THRIFT_NATIVE_SKIP_SOURCE_GEM"]
    Dir.mktmpdir("thrift_native_gem") do |dir|
      gem_file = File.join(dir, "thrift_native.gem")
      home = File.join(dir, "home")
      out, status = Open3.capture2e("gem", "build", "thrift_native.gemspec", "--output", gem_file, chdir: root)
      expect(status).to be_success, out
      out, status = Open3.capture2e("gem", "install", "--local", "--no-document", "--install-dir", home, gem_file)
      expect(status).to be_success, out

      installed = Dir.glob("#{home}/**/*", File::FNM_DOTMATCH)
      expect(installed.grep(%r{/target(/|\z)})).to eq([])
      expect(installed.grep(%r{/thrift_native/thrift_native\.#{RbConfig::CONFIG["DLEXT"]}\z})).not_to be_empty

      # Debian's ruby-thrift is a gem too, and it also provides a thrift_native.so: activating this gem (as a
      # Gemfile does) puts our lib/thrift_native.rb ahead of it.
      env = { "GEM_HOME" => home, "GEM_PATH" => ([home] + Gem.path).join(File::PATH_SEPARATOR) }
      code = 'gem "thrift_native"; require "thrift"; require "thrift_native"; ' \
             'p [ThriftNative.active?, ThriftNative::VERSION, $LOADED_FEATURES.grep(/thrift_native\.so\z/).map { |f| f.start_with?(ENV["GEM_HOME"]) }]'
      out, err, ok = ChildRuby.capture("-e", code, env: env, chdir: dir)
      expect([ok, err]).to eq([true, ""])
      expect(out).to eq("[true, #{ThriftNative::VERSION.inspect}, [true]]\n")
    end
  end

  # The precompiled platform gem's layout (bin/matrix native-gem builds and installs the real one): one extension per
  # Ruby in lib/thrift_native/<ruby>/, the running Ruby's loaded, a clear LoadError on another Ruby.
  it "loads the running Ruby's extension from lib/thrift_native/<ruby>/, and names the source gem on another Ruby" do
    Dir.mktmpdir("thrift_native_platform") do |dir|
      lib = File.join(dir, "lib")
      FileUtils.mkdir_p(File.join(lib, "thrift_native"))
      FileUtils.cp(File.join(root, "lib", "thrift_native.rb"), lib)
      Dir[File.join(root, "lib", "thrift_native", "*.rb")].each { |f| FileUtils.cp(f, File.join(lib, "thrift_native")) }
      ruby = RUBY_VERSION[/\A\d+\.\d+/]
      so = "thrift_native.#{RbConfig::CONFIG["DLEXT"]}"
      FileUtils.mkdir_p(File.join(lib, "thrift_native", ruby))
      FileUtils.cp(File.join(root, "lib", "thrift_native", ruby, so), File.join(lib, "thrift_native", ruby, so))
      code = 'begin; require "thrift_native"; p [ThriftNative.active?, $LOADED_FEATURES.grep(%r{/thrift_native/[\d.]+/thrift_native\.so\z}).size]; ' \
             "rescue LoadError => e; puts e.message; end"
      expect(ChildRuby.capture("-I", lib, "-e", code)).to eq(["[true, 1]\n", "", true])
      FileUtils.mv(File.join(lib, "thrift_native", ruby), File.join(lib, "thrift_native", "9.9"))
      FileUtils.mkdir_p(File.join(lib, "thrift_native", "9.8"))
      FileUtils.cp(File.join(lib, "thrift_native", "9.9", so), File.join(lib, "thrift_native", "9.8", so))
      expect(ChildRuby.capture("-I", lib, "-e", code)).to eq(
        ["this precompiled thrift_native holds extensions for Ruby 9.8, 9.9, not #{ruby}: install the source gem " \
         "(gem install thrift_native --platform ruby), which builds with cargo\n", "", true]
      )
    end
  end
end
