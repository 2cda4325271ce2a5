import java.io.File;
import java.util.Arrays;

/** Prints what java.io.File says about args[0] (a directory), its entries and args[1]. */
public class FileMeta {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        System.out.println(dir + ": exists " + dir.exists() + " dir " + dir.isDirectory() + " file " + dir.isFile());
        String[] names = dir.list();
        Arrays.sort(names);
        System.out.println("list " + String.join(",", names));
        File[] files = dir.listFiles();
        Arrays.sort(files);
        for (File f : files) {
            System.out.println(f.getName() + ": file " + f.isFile() + " dir " + f.isDirectory() + " length " + f.length()
                    + " mtime " + f.lastModified() + " readable " + f.canRead() + " hidden " + f.isHidden());
        }
        File missing = new File(args[1]);
        System.out.println(missing + ": exists " + missing.exists() + " length " + missing.length()
                + " mtime " + missing.lastModified() + " list " + Arrays.toString(missing.list()));
        // A program that branches on metadata takes the recorded branch in replay.
        if (missing.exists()) {
            System.out.println("branch: found " + args[1]);
        } else {
            System.out.println("branch: no " + args[1]);
        }
    }
}
