import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Prints what java.nio.file says about args[0] (a directory), its entries (listed three ways)
 * and args[1] (missing at record time). With args[2] == "extra" it asks one more question
 * before listing: a changed program.
 */
public class NioMeta {
    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Path missing = Path.of(args[1]);
        // The missing path first: its first call is a stat on both JDKs.
        System.out.println(missing + ": size " + attempt(() -> Files.size(missing)));
        System.out.println(dir + ": exists " + Files.exists(dir) + " notExists " + Files.notExists(dir)
                + " dir " + Files.isDirectory(dir) + " file " + Files.isRegularFile(dir)
                + " readable " + Files.isReadable(dir) + " nofollow " + Files.exists(dir, LinkOption.NOFOLLOW_LINKS));
        if (args.length > 2 && args[2].equals("extra")) {
            System.out.println("extra: " + Files.isExecutable(dir.resolve("a.txt")));
        }
        try (Stream<Path> s = Files.list(dir)) {
            System.out.println("list " + s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.joining(",")));
        }
        List<String> txt = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*.txt")) {
            for (Path p : ds) txt.add(p.getFileName().toString());
        }
        Collections.sort(txt);
        System.out.println("glob *.txt " + txt);
        try (Stream<Path> s = Files.walk(dir)) {
            System.out.println("walk " + s.map(p -> dir.relativize(p).toString()).sorted().collect(Collectors.joining(",")));
        }
        List<Path> entries;
        try (Stream<Path> s = Files.list(dir)) {
            entries = s.sorted().collect(Collectors.toList());
        }
        for (Path p : entries) {
            BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
            System.out.println(p.getFileName() + ": file " + Files.isRegularFile(p) + " dir " + Files.isDirectory(p)
                    + " size " + Files.size(p) + " mtime " + Files.getLastModifiedTime(p).toMillis()
                    + " attrs [" + a.isRegularFile() + " " + a.isDirectory() + " " + a.size() + " "
                    + a.lastModifiedTime().toMillis() + " key " + (a.fileKey() != null ? a.fileKey().hashCode() : 0) + "]"
                    + " readable " + Files.isReadable(p) + " writable " + Files.isWritable(p)
                    + (a.isRegularFile() ? " text [" + Files.readString(p).trim() + "]" : ""));
        }
        System.out.println(missing + ": exists " + Files.exists(missing) + " notExists " + Files.notExists(missing)
                + " dir " + Files.isDirectory(missing) + " readable " + Files.isReadable(missing)
                + " attrs " + attempt(() -> Files.readAttributes(missing, BasicFileAttributes.class).size())
                + " list " + attempt(() -> Files.list(missing).count()));
        // A program that branches on metadata takes the recorded branch in replay.
        if (Files.exists(missing)) {
            System.out.println("branch: found " + args[1]);
        } else {
            System.out.println("branch: no " + args[1]);
        }
    }

    interface Io<T> {
        T get() throws IOException;
    }

    static String attempt(Io<?> f) {
        try {
            return String.valueOf(f.get());
        } catch (IOException e) {
            return e.getClass().getSimpleName() + "(" + e.getMessage() + ")";
        }
    }
}
